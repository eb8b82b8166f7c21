import { useEffect, useState } from 'preact/hooks';
import { ErrorAlert } from '../alert';
import { apiGet } from '../api';
import { apiSend, errorText, type Rights } from '../actions';
import { navigate } from '../router';
import type { Job } from './types';

// A bulk replay (POST /deadletter/replay): started for the ticked dead letters or for every
// one the filter matches, followed twice a second (GET /deadletter/replay/:job) until it ends,
// stopped with Stop (POST .../stop). The counts shown are the server's.

type Props = { apiKey: string | null; configId: string; reasonType: string; selected: string[]; rights: Rights; onEnd: (j: Job) => void; jobId: string | null };

export const useBulk = ({ apiKey, configId, reasonType, selected, onEnd, jobId }: Props) => {
  const [job, setJob] = useState<Job | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [rate, setRate] = useState(50);
  const running = job?.state === 'running';

  // The job named in the URL (a reload, a shared link) is followed again.
  useEffect(() => {
    if (jobId && jobId !== job?.job_id) apiGet<Job>(`/deadletter/replay/${encodeURIComponent(jobId)}`, apiKey).then(setJob, (e) => setError(errorText(e)));
  }, [jobId, apiKey]);

  useEffect(() => {
    if (!job || job.state !== 'running') return;
    const t = setTimeout(() => {
      apiGet<Job>(`/deadletter/replay/${job.job_id}`, apiKey).then(
        (j) => {
          setJob(j);
          if (j.state !== 'running') onEnd(j);
        },
        (e) => setError(errorText(e)),
      );
    }, 500);
    return () => clearTimeout(t);
  }, [job, apiKey]);

  const start = (which: 'selected' | 'all') => {
    if (running) return;
    setError(null);
    const body = { rate, ...(which === 'selected' ? { ids: selected } : reasonType ? { reason_type: reasonType } : {}) };
    apiSend<Job>('POST', `/deadletter/replay?config_id=${encodeURIComponent(configId)}`, apiKey, body).then(
      (j) => {
        setJob(j);
        const q = new URLSearchParams(location.search);
        q.set('job', j.job_id);
        navigate(`${location.pathname}?${q}`, true);
      },
      (e) => setError(errorText(e)),
    );
  };
  const stop = () => {
    if (!job || !running) return;
    apiSend<Job>('POST', `/deadletter/replay/${job.job_id}/stop`, apiKey).then(setJob, (e) => setError(errorText(e)));
  };
  return { job, error, running, start, stop, rate, setRate };
};

const STATE_TEXT: Record<Job['state'], string> = { running: 'running', stopped: 'stopped', done: 'done', failed: 'failed' };

export const BulkPanel = ({
  bulk,
  rights,
  selected,
  configId,
  reasonType,
}: { bulk: ReturnType<typeof useBulk> } & Pick<Props, 'rights' | 'selected' | 'configId' | 'reasonType'>) => {
  const { job, error, running, start, stop, rate, setRate } = bulk;
  const off = !rights.act || running;
  const done = job ? job.replayed + job.skipped + job.not_found + job.failed : 0;
  return (
    <section class="panel bulk" aria-labelledby="bulk-title">
      <h2 id="bulk-title">Bulk replay</h2>
      <div class="row">
        <label for="bulk-rate">Rate</label>
        <select id="bulk-rate" value={rate} disabled={running} onChange={(e) => setRate(Number(e.currentTarget.value))}>
          {[5, 10, 50, 200].map((r) => (
            <option key={r} value={r}>
              {r} a second
            </option>
          ))}
        </select>
        <button type="button" disabled={off || selected.length === 0} onClick={() => start('selected')} aria-keyshortcuts="m">
          Replay selected ({selected.length})
        </button>
        <button type="button" disabled={off} onClick={() => start('all')} aria-keyshortcuts="a">
          Replay all of {configId}
          {reasonType ? ` (${reasonType})` : ''}
        </button>
        <button type="button" class="danger" disabled={!running || !rights.act} onClick={stop} aria-keyshortcuts="q">
          Stop
        </button>
      </div>
      {!rights.act && rights.why && <p class="why">{rights.why}</p>}
      <ErrorAlert text={error} />
      {job && (
        <div data-testid="bulk-job">
          <p role="status">
            Job <code>{job.job_id}</code> {STATE_TEXT[job.state]}: <strong data-testid="bulk-replayed">{job.replayed}</strong> replayed
            {job.total !== null ? ` of ${job.total}` : ''}, {job.skipped} skipped, {job.not_found} not found, {job.failed} failed.
          </p>
          {job.total !== null && job.total > 0 ? (
            <progress max={job.total} value={done} aria-label="Bulk replay progress">
              {done} of {job.total}
            </progress>
          ) : (
            running && <progress aria-label="Bulk replay progress" />
          )}
          {job.error && <p class="error">Last error: {job.error}</p>}
        </div>
      )}
    </section>
  );
};
