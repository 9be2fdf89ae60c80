/**
 * Files named by settings (secrets, certificates, keys): read once at start-up, and checked there, so that a missing,
 * unreadable or wrong file is ONE line that names the setting (exit code 2), never a stack trace from deep inside
 * the first request ("unexpected failure: Error: ENOENT ... '/nonexistent/c.crt'").
 *
 * Every file setting goes through `readSettingFile`; TLS material is checked as a whole by `checkTlsPair`
 * (a PEM certificate, its private key, the passphrase when the key is encrypted, the key matching the certificate).
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError } from './errors.js';

const REASONS: Record<string, string> = {
  ENOENT: 'no such file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EISDIR: 'it is a folder, not a file',
  ENOTDIR: 'a part of the path is not a folder',
  ELOOP: 'too many symbolic links',
};

/** Reads the file of `setting` as UTF-8 text; a failure is a ConfigError "setting: cannot read FILE: reason". */
export function readSettingFile(setting: string, file: string, cwd: string = process.cwd()): string {
  const full = path.resolve(cwd, file);
  try {
    return readFileSync(full, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? '';
    const reason = REASONS[code] ?? (err as Error).message;
    throw new ConfigError(`${setting}: cannot read ${full}: ${reason}${code ? ` (${code})` : ''}`, {
      code: code === 'ENOENT' ? 'CONFIG_NOT_FOUND' : 'CONFIG_UNREADABLE',
      cause: err,
    });
  }
}

/** A file and the setting (or credential) it came from, for messages. */
export interface SettingText {
  setting: string;
  file: string;
  text: string;
}

/** Reads `file` when given; the setting is named in any error. */
export function readIfSet(setting: string, file: string | undefined, cwd: string): SettingText | undefined {
  if (!file) return undefined;
  return { setting, file: path.resolve(cwd, file), text: readSettingFile(setting, file, cwd) };
}

/**
 * Reads the systemd credential `name` ($CREDENTIALS_DIRECTORY/name, LoadCredential=) when it exists. Its absence is
 * not an error (the credential is optional); an unreadable one is.
 */
export function readCredential(directory: string | undefined, name: string): SettingText | undefined {
  if (!directory) return undefined;
  const file = path.join(directory, name);
  if (!existsSync(file)) return undefined;
  const setting = `systemd credential ${name}`;
  return { setting, file, text: readSettingFile(setting, file) };
}

/**
 * Checks a certificate and its private key: the certificate is PEM, the key can be read (with `passphrase` when it
 * is encrypted) and belongs to the certificate. `passphraseHint` says where a passphrase can be given.
 * Returns nothing; throws a ConfigError naming the setting at fault.
 */
export function checkTlsPair(
  cert: SettingText,
  key: SettingText,
  passphrase: string | undefined,
  passphraseHint: string,
): void {
  const x509 = parseCertificate(cert);
  let privateKey: KeyObject;
  try {
    privateKey = createPrivateKey(passphrase === undefined ? key.text : { key: key.text, passphrase });
  } catch (err) {
    const encrypted = /ENCRYPTED/.test(key.text);
    const why =
      encrypted && passphrase === undefined
        ? `the key is encrypted and no passphrase was given (${passphraseHint})`
        : encrypted
          ? 'the passphrase does not open the key'
          : `not a PEM private key (${(err as Error).message})`;
    throw new ConfigError(`${key.setting}: cannot use ${key.file}: ${why}`, { code: 'CONFIG_INVALID', cause: err });
  }
  if (!x509.checkPrivateKey(privateKey)) {
    throw new ConfigError(`${key.setting}: the key in ${key.file} does not belong to the certificate in ${cert.file}`, {
      code: 'CONFIG_INVALID',
    });
  }
}

/** Checks that the file holds at least one PEM certificate (a CA bundle may hold several). */
export function checkCertificates(file: SettingText): void {
  parseCertificate(file);
}

function parseCertificate(file: SettingText): X509Certificate {
  try {
    if (!file.text.includes('-----BEGIN CERTIFICATE-----')) throw new Error('no "BEGIN CERTIFICATE" block');
    return new X509Certificate(file.text);
  } catch (err) {
    throw new ConfigError(
      `${file.setting}: ${file.file} is not a PEM certificate: Expected "-----BEGIN CERTIFICATE-----", got ${describeStart(file.text)}`,
      { code: 'CONFIG_INVALID', cause: err },
    );
  }
}

/** What the file starts with, without quoting it (a wrong file may hold a secret). */
function describeStart(text: string): string {
  const first = text.trim().split('\n')[0] ?? '';
  if (first === '') return 'an empty file';
  if (/PRIVATE KEY/.test(first)) return 'a private key';
  if (first.startsWith('-----BEGIN ')) return `a PEM block of another kind`;
  return 'text that is not PEM';
}
