import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { SERIES, type Timeline } from './summary';

// One timeline as a uPlot chart (bundled, drawn on a canvas: no inline style attribute).
// The chart is decorative for screen readers: the numbers are in the page's summary.

const data = (t: Timeline): uPlot.AlignedData => [t.buckets.map((b) => Date.parse(b.start) / 1000), ...SERIES.map((s) => t.buckets.map((b) => b[s.key]))];

export const Chart = ({ timeline, title }: { timeline: Timeline; title: string }) => {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  useEffect(() => {
    const el = box.current!;
    const opts: uPlot.Options = {
      title,
      width: Math.max(320, el.clientWidth - 8),
      height: 240,
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
      scales: { y: { range: (_u, _min, max) => [0, Math.max(4, Math.ceil(max * 1.15))] } },
      axes: [{}, { label: timeline.bucket_seconds === 60 ? 'per minute' : 'per 15 minutes' }],
      legend: { live: false },
      series: [{}, ...SERIES.map((s) => ({ label: s.label, stroke: s.color, fill: `${s.color}1a`, width: 2, points: { show: false } }))],
    };
    plot.current = new uPlot(opts, data(timeline), el);
    return () => {
      plot.current?.destroy();
      plot.current = null;
    };
  }, [title]);
  useEffect(() => {
    plot.current?.setData(data(timeline));
  }, [timeline]);
  return <div class="chart" ref={box} aria-hidden="true" />;
};
