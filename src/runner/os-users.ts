/**
 * Who did something, as the OS tells it (maker-checker, src/store/approvals.ts rule 3): the owner of a file (who
 * dropped a payment file, who wrote an `.approved` marker) and the user running this process (`remessa approve`).
 * A name comes from /etc/passwd by uid, `uid N` when the uid has no entry (a container's user): names, not uids, are
 * compared, so a decision taken on another host of a shared store compares as the people are known there. A payment
 * file's owner is read where it was dropped: the intake keeps the uid of the file it takes, read from the file moved
 * before a copy across file systems makes it this process's own (src/intake/work-area.ts `ownerUid`), and the name is
 * read from it here when the maker is recorded (./approval.ts `makerOf`).
 *
 * A command started by `sudo -u remessa ...` (the documented way to reach the store) runs as remessa's account, which
 * tells no approver apart: its person is who called sudo (`commandUser`: SUDO_UID, which sudo sets to the caller's
 * real uid and never takes from the caller's environment), and the account it ran as is kept beside (`ranAs`).
 * SUDO_UID is trusted without more proof because forging it needs a shell as the target account already, and whoever
 * has one can write the store (decided_user included) directly: it adds no power, it only stops the sudo caller from
 * hiding behind the account. `su` and `runuser` leave no such trace: their command reads as the account itself.
 *
 * What must hold: an identity that cannot be read is null, never a guess. A file that is a link (symbolic, or a hard
 * link: more than one name) is null too: its owner is not who put it there (anyone may link to a file of another
 * person). Names that stand for many people (`nobody`) are returned as they read; the rules refuse them
 * (`distinctUser` in src/store/approvals.ts).
 */
import { lstat, readFile } from 'node:fs/promises';

/** The OS user name of `uid` (from /etc/passwd), `uid N` when it has none. */
export async function userNameOfUid(uid: number): Promise<string> {
  const passwd = await readFile('/etc/passwd', 'utf8').catch(() => '');
  for (const line of passwd.split('\n')) {
    const fields = line.split(':');
    if (fields.length >= 3 && fields[2] === String(uid)) return fields[0]!;
  }
  return `uid ${uid}`;
}

/**
 * The OS user name owning `file`, null when it cannot be read or the file is a link (see the header). Not followed:
 * the owner of a symbolic link's target is not who made the link.
 */
export async function fileOwner(file: string): Promise<string | null> {
  const st = await lstat(file).catch(() => undefined);
  if (!st?.isFile() || st.nlink > 1) return null;
  return userNameOfUid(st.uid);
}

/** The OS user running this process (its real uid), null where the OS has no uids (Windows). */
export async function processUser(): Promise<string | null> {
  const uid = process.getuid?.();
  return uid === undefined ? null : userNameOfUid(uid);
}

/** Who runs a command (src/store/approvals.ts rule 3): the person, and the account they ran it as through sudo. */
export interface CommandUser {
  /** The person's OS user: the caller of sudo when started by sudo as another account, else `processUser`. */
  user: string | null;
  /** The account the command ran as when started by sudo as another one (`remessa`), else undefined. */
  ranAs?: string | undefined;
}

/**
 * The OS user running this command, seen through sudo (see the header): started by `sudo -u ACCOUNT` (SUDO_UID set,
 * another uid than this process's), the person is SUDO_UID's name and the account is `ranAs`. A SUDO_UID that is not
 * a uid reads as unknown (null), never as the account: the rules then refuse, fail closed.
 */
export async function commandUser(env: NodeJS.ProcessEnv = process.env): Promise<CommandUser> {
  const me = await processUser();
  const sudoUid = env.SUDO_UID;
  if (sudoUid === undefined || me === null) return { user: me };
  if (!/^\d{1,10}$/.test(sudoUid.trim())) return { user: null, ranAs: me };
  const caller = Number(sudoUid.trim());
  if (caller === process.getuid?.()) return { user: me };
  return { user: await userNameOfUid(caller), ranAs: me };
}
