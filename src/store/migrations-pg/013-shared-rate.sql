-- PostgreSQL translation of ../migrations/013-shared-rate.sql (see the comments there, and src/queue/shared-rate.ts).
CREATE TABLE rate_starts (
  group_name TEXT NOT NULL,
  at_ms DOUBLE PRECISION NOT NULL,
  daemon TEXT NOT NULL
);
CREATE INDEX rate_starts_group_at ON rate_starts (group_name, at_ms);
CREATE TABLE rate_groups (
  group_name TEXT PRIMARY KEY,
  paused_until_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
  ceiling INTEGER,
  changed_at_ms DOUBLE PRECISION NOT NULL DEFAULT 0,
  decreased_at_ms DOUBLE PRECISION,
  pace_at_ms DOUBLE PRECISION
);
-- One admission of a start (src/queue/shared-rate.ts `tryStart`, which says the rules), done on the server so that the
-- locks are held for no round trip: per limit i (the group's, then the overall one: the lock order), under its
-- transaction-scoped advisory lock, on the database's clock: the pause, the ceiling (AIMD increase accrued), the
-- window's starts and the pace. Room: the start is recorded in every limit (started_at), old starts pruned. No room:
-- wait_ms (and paused_ms when a pause is why), nothing written; a wait of at most spin_ms is slept here, locks held.
-- Its commit need not be flushed (a start, not an intent: see shared-rate.ts).
CREATE FUNCTION remessa_rate_admit(
  names TEXT[], requests INTEGER[], window_ms DOUBLE PRECISION[], hold_ms DOUBLE PRECISION[], adaptive BOOLEAN[],
  step INTEGER[], burst INTEGER, spin_ms DOUBLE PRECISION, daemon_name TEXT, lock_class INTEGER, lock_ids INTEGER[],
  OUT started_at DOUBLE PRECISION, OUT wait_ms DOUBLE PRECISION, OUT paused_ms DOUBLE PRECISION,
  OUT ceilings INTEGER[])
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
  n INTEGER := array_length(names, 1);
  now_ms DOUBLE PRECISION;
  v_paused DOUBLE PRECISION;
  v_ceiling INTEGER;
  v_changed DOUBLE PRECISION;
  v_pace DOUBLE PRECISION;
  cap INTEGER;
  k INTEGER;
  cnt INTEGER;
  oldest DOUBLE PRECISION;
  changed DOUBLE PRECISION[];
  rounds INTEGER := 0;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  FOR i IN 1..n LOOP
    PERFORM pg_advisory_xact_lock(lock_class, lock_ids[i]);
  END LOOP;
  LOOP
    now_ms := extract(epoch FROM clock_timestamp()) * 1000;
    wait_ms := 0;
    paused_ms := NULL;
    ceilings := ARRAY[]::INTEGER[];
    changed := ARRAY[]::DOUBLE PRECISION[];
    FOR i IN 1..n LOOP
      SELECT g.paused_until_ms, g.ceiling, g.changed_at_ms, g.pace_at_ms INTO v_paused, v_ceiling, v_changed, v_pace
        FROM rate_groups g WHERE g.group_name = names[i];
      IF NOT FOUND THEN
        v_paused := 0;
        v_ceiling := NULL;
        v_changed := 0;
        v_pace := NULL;
      END IF;
      IF v_paused > now_ms THEN
        paused_ms := greatest(coalesce(paused_ms, 0), v_paused - now_ms);
        wait_ms := greatest(wait_ms, v_paused - now_ms);
      END IF;
      cap := requests[i];
      IF adaptive[i] AND v_ceiling IS NOT NULL THEN
        cap := least(v_ceiling, requests[i]);
        IF cap < requests[i] AND now_ms - v_changed >= window_ms[i] THEN
          k := floor((now_ms - v_changed) / window_ms[i]);
          cap := least(requests[i], cap + k * step[i]);
          v_changed := v_changed + k * window_ms[i];
        END IF;
      END IF;
      ceilings := ceilings || cap;
      changed := changed || v_changed;
      SELECT count(*) INTO cnt FROM rate_starts s WHERE s.group_name = names[i] AND s.at_ms > now_ms - hold_ms[i];
      IF cnt >= cap THEN
        SELECT s.at_ms INTO oldest FROM rate_starts s WHERE s.group_name = names[i] AND s.at_ms > now_ms - hold_ms[i]
          ORDER BY s.at_ms OFFSET cnt - cap LIMIT 1;
        wait_ms := greatest(wait_ms, oldest + hold_ms[i] - now_ms);
      END IF;
      IF v_pace IS NOT NULL THEN
        wait_ms := greatest(wait_ms, v_pace - (burst - 1) * hold_ms[i] / cap - now_ms);
      END IF;
    END LOOP;
    EXIT WHEN wait_ms <= 0 OR wait_ms > spin_ms OR paused_ms IS NOT NULL OR rounds >= 3;
    rounds := rounds + 1;
    PERFORM pg_sleep(wait_ms / 1000);
  END LOOP;
  IF wait_ms > 0 THEN
    RETURN;
  END IF;
  started_at := now_ms;
  wait_ms := NULL;
  FOR i IN 1..n LOOP
    INSERT INTO rate_starts (group_name, at_ms, daemon) VALUES (names[i], now_ms, daemon_name);
    DELETE FROM rate_starts s WHERE s.group_name = names[i] AND s.at_ms <= now_ms - hold_ms[i];
    INSERT INTO rate_groups AS g (group_name, paused_until_ms, ceiling, changed_at_ms, decreased_at_ms, pace_at_ms)
      VALUES (names[i], 0, CASE WHEN ceilings[i] >= requests[i] THEN NULL ELSE ceilings[i] END, changed[i], NULL,
        now_ms + hold_ms[i] / ceilings[i])
      ON CONFLICT (group_name) DO UPDATE SET ceiling = excluded.ceiling, changed_at_ms = excluded.changed_at_ms,
        pace_at_ms = greatest(coalesce(g.pace_at_ms, now_ms), now_ms) + hold_ms[i] / ceilings[i];
  END LOOP;
END;
$fn$;
