/**
 * What a click's user agent says: device type, browser, OS, and whether it is a bot. Parsed in
 * the click batch, off the redirect's path. Bots are recognised by isbot (a maintained list of
 * crawlers, previewers, monitors and HTTP libraries) and by our own older pattern, so that no
 * user agent classified `bot` before is classified otherwise now; a bot's device type is `bot`,
 * which is how a click is stored as one (no column of its own: clicks stored before the
 * analytics were classified the same way).
 */
import { isbot } from 'isbot';
import UAParser from 'ua-parser-js';

export interface AgentInfo {
  /** desktop, mobile, tablet, smarttv, wearable, console, embedded, xr, bot; '' without a user agent. */
  device: string;
  browser: string;
  os: string;
}

const BOT = /bot|crawl|spider|slurp|facebookexternalhit|preview|curl|wget|python-requests|httpclient|headless/i;

/** Parsing is regex-heavy and a few user agents make most of the traffic: remember them. */
const cache = new Map<string, AgentInfo>();
const CACHE_MAX = 2000;

const NONE: AgentInfo = { device: '', browser: '', os: '' };

export function parseAgent(userAgent: string): AgentInfo {
  if (!userAgent) return NONE;
  let info = cache.get(userAgent);
  if (info === undefined) {
    const p = new UAParser(userAgent);
    const bot = BOT.test(userAgent) || isbot(userAgent);
    info = {
      device: bot ? 'bot' : (p.getDevice().type ?? 'desktop'),
      browser: (p.getBrowser().name ?? '').slice(0, 100),
      os: (p.getOS().name ?? '').slice(0, 100),
    };
    if (cache.size >= CACHE_MAX) cache.clear();
    cache.set(userAgent, info);
  }
  return info;
}
