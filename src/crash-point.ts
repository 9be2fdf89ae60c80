/**
 * Named points where a test makes the process die abruptly (SIGKILL to itself), to prove that what must survive a
 * crash at that instant does. Only when the environment variable REMESSA_TEST_CRASH_AT names the point; without it
 * (always, outside tests) a crash point does nothing.
 *
 * Points:
 * - `after-resume`: rows of earlier batches were settled in the store, their answers not rewritten yet;
 * - `answer-renamed`: a new version of an answer is in place, the store does not know yet;
 * - `marker-claimed`: an approval marker was claimed (renamed to its dot file), its decision not recorded yet.
 */
export type CrashPointName = 'after-resume' | 'answer-renamed' | 'marker-claimed';

export function crashPoint(name: CrashPointName): void {
  if (process.env.REMESSA_TEST_CRASH_AT === name) process.kill(process.pid, 'SIGKILL');
}
