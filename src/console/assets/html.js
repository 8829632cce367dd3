// Preact + htm: JSX-like templates without a build step. Every module of the app imports from here.
import { h, render } from '/console/vendor/preact.js';
import htm from '/console/vendor/htm.js';

export const html = htm.bind(h);
export { h, render };
export { useCallback, useEffect, useId, useMemo, useRef, useState } from '/console/vendor/preact-hooks.js';
