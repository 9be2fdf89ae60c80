/**
 * Whether a process of this pid runs on this machine: signal 0 checks without sending anything (EPERM: it runs, as
 * another user). The caller makes sure the pid is a real one (0 and negatives name process groups).
 */
export function isProcessRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
