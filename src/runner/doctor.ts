/**
 * `remessa doctor`: checks a provider profile against the bank before going live, with read-only calls.
 *
 * What must hold: doctor sends GET requests only, never one that acts (no POST, PATCH, PUT or DELETE), whatever the
 * profile or the overrides say; each is sent once (no retry). Identifiers it looks up are made up
 * (`remessa-doctor-<uuid>`), so a 404 there is the expected answer of a known path; only the list calls (charges by
 * date, webhooks) can tell a known path (2xx) from an unknown one (404).
 *
 * It reports three things:
 * 1. every read of the configured profile (with the user's overrides): method, path, status, what that means;
 * 2. which API key header the bank accepts: the same GET (webhook list) once per known header name;
 * 3. which charges path answers: the charges list under each profile's path.
 * and a verdict: which profile the answers fit. With a PostgreSQL store (`store.url`), a fourth: whether the store
 * opens with the configured role and password (read-only: nothing written, no migration applied), so that a wrong
 * password file or a server that is down is told here, not at the daemon's start. Exit code 0 when the configured
 * profile's API key header is accepted, its list calls answer 2xx and the store (if PostgreSQL) opens; 1 otherwise;
 * 2 when the bank cannot be reached at all.
 */
import { randomUUID } from 'node:crypto';
import { BankClient, type BankClientOptions } from '../bank/client.js';
import { EXIT_CANNOT_RUN, EXIT_NOT_ALL_SUCCEEDED, EXIT_OK } from '../exit-codes.js';
import {
  BANK_PROFILE_DEFINITIONS,
  BANK_PROFILES,
  type BankOperation,
  type BankProfileName,
} from '../formats/profiles.js';
import { describeStorePlace, runnerStorePlace } from '../store/place.js';
import { out, type RunnerOptions } from './options.js';

/** One GET doctor made and what came back. */
export interface DoctorProbe {
  /** Always 'GET'. */
  method: 'GET';
  /** What was checked: an operation of the profile, or a header/path alternative. */
  what: string;
  path: string;
  /** The API key header name the request carried. */
  header: string;
  status?: number;
  /** Connection failure, when there was no answer. */
  error?: string;
  /** What the answer means. */
  meaning: string;
  /** Whether the answer is the one expected of a profile that fits. */
  ok: boolean;
}

export interface DoctorReport {
  baseUrl: string;
  profile: BankProfileName;
  /** Reads of the configured profile. */
  reads: DoctorProbe[];
  /** The same GET under each known API key header name. */
  headers: DoctorProbe[];
  /** The charges list under each profile's path. */
  chargesPaths: DoctorProbe[];
  /** Profiles whose API key header was accepted and whose charges path answered. */
  fits: BankProfileName[];
  /** The configured profile's header was accepted and its list calls answered 2xx. */
  ok: boolean;
  /** Nothing answered at all. */
  unreachable: boolean;
}

function meaningOf(status: number | undefined, error: string | undefined, expectFound: boolean): [string, boolean] {
  if (status === undefined) return [`no answer (${error ?? 'unknown error'})`, false];
  if (status === 401) return ['401: the API key (or its header name) was refused', false];
  if (status === 403) return ['403: the key was recognised but may not do this', !expectFound];
  if (status === 404) {
    return expectFound
      ? ['404: unknown path (a list call exists whenever the path is right)', false]
      : ['404: path answered, made-up id not found (expected)', true];
  }
  if (status === 405) return ['405: the path exists with another method', false];
  if (status >= 200 && status < 300) return [`${status}: answered`, true];
  if (status === 400) return ['400: the path is known; the bank refused the parameters', !expectFound];
  if (status === 429) return ['429: rate limited; try again later', false];
  if (status >= 500) return [`${status}: the bank failed`, false];
  return [`${status}`, false];
}

function today(): string {
  return new Date().toISOString().slice(0, 10);
}

/** Runs every check against the bank `client` talks to (its profile, overrides, TLS). GETs only. */
export async function diagnose(
  client: BankClient,
  baseUrl: string,
  apiKey: string,
  accountId?: string,
): Promise<DoctorReport> {
  const profile = client.profile;
  const made = `remessa-doctor-${randomUUID()}`;
  const listQuery = `?startDate=${today()}&endDate=${today()}&limit=1`;
  const reads: Array<{ what: BankOperation; path: string; expectFound: boolean }> = [
    { what: 'charges', path: `${client.pathOf('charges')}${listQuery}`, expectFound: true },
    { what: 'webhooks', path: client.pathOf('webhooks'), expectFound: true },
    { what: 'charge', path: client.pathOf('charge', made), expectFound: false },
    { what: 'dynamicQrGet', path: client.pathOf('dynamicQrGet', made), expectFound: false },
    { what: 'staticQrGet', path: client.pathOf('staticQrGet', made), expectFound: false },
    { what: 'pixPaymentGet', path: client.pathOf('pixPaymentGet', made), expectFound: false },
    { what: 'webhook', path: client.pathOf('webhook', made), expectFound: false },
  ];
  const probe = async (
    what: string,
    path: string,
    expectFound: boolean,
    headers?: Record<string, string>,
  ): Promise<DoctorProbe> => {
    const answer = await client.probe(path, headers ? { headers } : {});
    const [meaning, ok] = meaningOf(answer.status, answer.error, expectFound);
    const header = headers ? (Object.keys(headers).find((h) => headers[h] === apiKey) ?? '?') : profile.headers.apiKey;
    return {
      method: 'GET',
      what,
      path,
      header,
      ...(answer.status !== undefined ? { status: answer.status } : {}),
      ...(answer.error !== undefined ? { error: answer.error } : {}),
      meaning,
      ok,
    };
  };

  const readProbes: DoctorProbe[] = [];
  for (const r of reads) readProbes.push(await probe(r.what, r.path, r.expectFound));

  // Every header name a profile uses, plus the configured one: the account id under each profile's name too.
  const headerNames = [
    ...new Set([profile.headers.apiKey, ...BANK_PROFILES.map((p) => BANK_PROFILE_DEFINITIONS[p].headers.apiKey)]),
  ];
  const accountHeaders: Record<string, string> = {};
  if (accountId !== undefined) {
    for (const p of BANK_PROFILES) accountHeaders[BANK_PROFILE_DEFINITIONS[p].headers.accountId] = accountId;
    accountHeaders[profile.headers.accountId] = accountId;
  }
  const headerProbes: DoctorProbe[] = [];
  for (const name of headerNames) {
    headerProbes.push(
      await probe(`API key in ${name}`, client.pathOf('webhooks'), true, { ...accountHeaders, [name]: apiKey }),
    );
  }
  const acceptedHeader = (name: string) =>
    headerProbes.some((p) => p.header === name && p.status !== undefined && p.status !== 401);

  const pathProbes: DoctorProbe[] = [];
  const chargesPaths = [
    ...new Set([client.pathOf('charges'), ...BANK_PROFILES.map((p) => BANK_PROFILE_DEFINITIONS[p].paths.charges)]),
  ];
  const workingHeader = headerNames.find(acceptedHeader) ?? profile.headers.apiKey;
  for (const path of chargesPaths) {
    pathProbes.push(
      await probe(`charges list at ${path}`, `${path}${listQuery}`, true, {
        ...accountHeaders,
        [workingHeader]: apiKey,
      }),
    );
  }
  // A 2xx, or a 400 about the parameters, means the path exists; a 404 on a list means it does not.
  const answeredPath = (path: string) =>
    pathProbes.some(
      (p) =>
        p.path.startsWith(`${path}?`) &&
        p.status !== undefined &&
        ((p.status >= 200 && p.status < 300) || p.status === 400),
    );
  const fits = BANK_PROFILES.filter(
    (p) =>
      acceptedHeader(BANK_PROFILE_DEFINITIONS[p].headers.apiKey) &&
      answeredPath(BANK_PROFILE_DEFINITIONS[p].paths.charges),
  );
  const all = [...readProbes, ...headerProbes, ...pathProbes];
  const unreachable = all.every((p) => p.status === undefined);
  const listsOk = readProbes.filter((p) => p.what === 'charges' || p.what === 'webhooks').every((p) => p.ok);
  return {
    baseUrl,
    profile: profile.name,
    reads: readProbes,
    headers: headerProbes,
    chargesPaths: pathProbes,
    fits,
    ok: listsOk && acceptedHeader(profile.headers.apiKey) && readProbes.every((p) => p.status !== 401),
    unreachable,
  };
}

/** The report as text, one line per GET. */
export function renderDoctorReport(report: DoctorReport): string {
  const line = (p: DoctorProbe) => `  ${p.ok ? 'ok  ' : 'FAIL'} GET ${p.path}  [${p.header}]  ${p.meaning}\n`;
  let text = `remessa doctor: ${report.baseUrl}, profile "${report.profile}" (read-only: GET requests only)\n`;
  text += `\nReads of the profile "${report.profile}":\n`;
  for (const p of report.reads) text += line(p);
  text += '\nWhich API key header the bank accepts:\n';
  for (const p of report.headers)
    text += `  ${p.status !== undefined && p.status !== 401 ? 'accepted' : 'refused '} ${p.header}: ${p.meaning}\n`;
  text += '\nWhich charges path answers:\n';
  for (const p of report.chargesPaths) text += line(p);
  text += '\n';
  const refusedEverywhere = report.headers.length > 0 && report.headers.every((p) => p.status === 401);
  if (report.unreachable) text += 'Verdict: the bank did not answer at all (URL, network, TLS?).\n';
  else if (refusedEverywhere)
    // Nothing was learnt about the profile: every answer was the key's refusal (a wrong key, or the account id).
    text +=
      `Verdict: the bank refused the API key under every header name (${report.headers.map((p) => p.header).join(', ')}` +
      '): the key (or the account id) is wrong or not for this environment; nothing could be learnt about the ' +
      'profile.\n';
  else if (report.fits.length === 0) text += 'Verdict: no known profile fits these answers; see docs/providers.md.\n';
  else
    text += `Verdict: the answers fit the profile${report.fits.length > 1 ? 's' : ''} ${report.fits.map((f) => `"${f}"`).join(', ')}.\n`;
  text += report.ok
    ? `The configured profile "${report.profile}" works here.\n`
    : `The configured profile "${report.profile}" does not work here as configured.\n`;
  return text;
}

/** `remessa doctor`: starts the embedded sandbox when configured, runs the checks, prints the report. */
export async function runDoctor(options: RunnerOptions): Promise<number> {
  let sandbox: { url: string; close(): Promise<void> } | undefined;
  let clientOptions: BankClientOptions;
  let accountId: string | undefined;
  if (options.bank.embedded) {
    const { startSandbox, SANDBOX_PUBLIC_API_KEY } = await import('../sandbox/server.js');
    sandbox = await startSandbox({
      port: 0,
      profile: options.bank.sandboxProfile ?? options.bank.client?.profile ?? 'interface',
      logger: options.logger.child({ component: 'sandbox' }, { level: 'warn' }),
    });
    accountId = options.bank.accountId ?? 'sandbox';
    clientOptions = { ...options.bank.client, baseUrl: sandbox.url, apiKey: SANDBOX_PUBLIC_API_KEY, accountId };
  } else {
    accountId = options.bank.accountId;
    clientOptions = { ...options.bank.client };
  }
  const client = new BankClient({ ...clientOptions, maxAttempts: 1 });
  try {
    const report = await diagnose(client, clientOptions.baseUrl, clientOptions.apiKey, accountId);
    out(options).write(renderDoctorReport(report));
    const storeOk = await checkStore(options);
    if (report.unreachable) return EXIT_CANNOT_RUN;
    return report.ok && storeOk ? EXIT_OK : EXIT_NOT_ALL_SUCCEEDED;
  } finally {
    await client.close();
    await sandbox?.close();
  }
}

/**
 * A PostgreSQL store: opened read-only once (connection, role, password, schema not newer than this remessa), its
 * line printed. The error's text is the driver's, which never holds the password (src/store/pg-driver.ts).
 */
async function checkStore(options: RunnerOptions): Promise<boolean> {
  const place = runnerStorePlace(options);
  if (place.engine !== 'postgres') return true;
  try {
    const store = await place.open({ readonly: true });
    try {
      // The pool connects lazily: one statement makes it log in.
      await store.sql.get('SELECT 1 AS one');
    } finally {
      await store.close();
    }
    out(options).write(`Store: ${describeStorePlace(place)}: connected (read-only).\n`);
    return true;
  } catch (error) {
    out(options).write(`Store: ${describeStorePlace(place)}: FAIL ${(error as Error).message}\n`);
    return false;
  }
}
