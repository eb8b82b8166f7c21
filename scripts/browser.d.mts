export declare const chromiumPath: () => string;
export declare const ensureChromium: () => string;
