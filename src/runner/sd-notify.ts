/**
 * Tells systemd how the daemon is doing (`Type=notify`): READY=1 once the inbox is watched, RELOADING=1 / READY=1
 * around a configuration reload, STOPPING=1 when a stop begins.
 *
 * Node cannot send to the AF_UNIX datagram socket systemd listens on (NOTIFY_SOCKET) without a native addon, so the
 * message goes through systemd's own `systemd-notify` tool, which the unit allows with `NotifyAccess=all` (the tool
 * runs as our child). Since systemd 246 the tool waits for the manager to have read the message (a notify barrier),
 * so the old race where a short-lived sender could not be attributed to the unit is gone. Without NOTIFY_SOCKET
 * (not under systemd, or `Type=exec`) nothing is sent. A failure is logged, never fatal: systemd then times the start
 * out, which an operator sees in `systemctl status`.
 */
import { execFile } from 'node:child_process';
import type { Logger } from '../log.js';

/** The variables `systemd-notify` sends, e.g. `READY=1`, `STATUS=watching inbox`. */
export function notifySystemd(message: string, log: Logger, env: NodeJS.ProcessEnv = process.env): void {
  if (!env.NOTIFY_SOCKET) return;
  const args = message.split('\n').filter((l) => l !== '');
  execFile('systemd-notify', args, { env, timeout: 10_000 }, (err) => {
    if (err) log.warn({ err, message }, 'could not notify systemd');
  });
}
