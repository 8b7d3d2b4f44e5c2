-- tunekit record store, schema version 4.
--
-- One SQLite file holds everything tunekit learns: the hardware it measured
-- on, the tasks (operators with shapes), the configurations tried, every
-- measurement with all its repeat times, the runs that produced them, and
-- derived data (features, models). lib/store/store.c embeds this file and
-- applies it to an empty database; later versions append migrations there,
-- keyed by PRAGMA user_version.
--
-- Version 2 (the tuning loop) added run.params, run_log and foreign_record.
-- Version 3 added measurement.load, version 4 measurement.bounded.
--
-- Times are seconds. Timestamps are Unix seconds (REAL). BLOBs of numbers
-- are zlib-compressed little-endian arrays (float64 for times, float32 for
-- features).

CREATE TABLE hardware (
  id        INTEGER PRIMARY KEY,
  key       TEXT NOT NULL UNIQUE,   -- identity: cpu|isa|compiler version|opt|threads=N, or a device
  kind      TEXT NOT NULL,          -- 'cpu' (measured here), 'simulated', 'imported', 'replay'
  cpu       TEXT,                   -- CPU model or device name
  isa       TEXT,                   -- avx512, avx2, sse2, or NULL
  cc        TEXT,                   -- compiler and version
  threads   INTEGER,
  spec      TEXT                    -- the --target spec that produced it
);

CREATE TABLE task (
  id        INTEGER PRIMARY KEY,
  key       TEXT NOT NULL UNIQUE,   -- canonical task string, e.g. dense:k=512,m=512,n=512
  op        TEXT NOT NULL,          -- operator name
  flops     REAL NOT NULL,          -- nominal floating point operations per call
  space     TEXT                    -- NULL for built-in templates; JSON space for imported ones
);

CREATE TABLE config (
  id        INTEGER PRIMARY KEY,
  task_id   INTEGER NOT NULL REFERENCES task(id),
  idx       INTEGER,                -- index in the space of the version that recorded it (NULL if foreign); configs match by text
  text      TEXT NOT NULL,          -- canonical knob text
  sched     TEXT NOT NULL,          -- schedule primitive sequence, one primitive per line
  UNIQUE (task_id, text)
);

CREATE TABLE run (
  id        INTEGER PRIMARY KEY,
  argv      TEXT NOT NULL,          -- the command line
  method    TEXT NOT NULL,          -- e.g. measure, tune/xgb+sa, import/kernel-tuner
  seed      INTEGER,
  hardware_id INTEGER REFERENCES hardware(id),
  replay    TEXT,                   -- dataset path when measurements were replayed
  started   REAL NOT NULL,
  ended     REAL,                   -- NULL while running or if killed
  params    TEXT                    -- key=value lines a resumed run restores (v2)
);

-- Per-round values of a tuning run (v2): epsilon:TASK after each fit (csa);
-- at the end of each tune process, round = trials so far, where its time
-- went: seconds:search, seconds:fit, seconds:codegen, seconds:compile,
-- seconds:run, and kernels:compiled, kernels:cached (see report runs).
CREATE TABLE run_log (
  run_id    INTEGER NOT NULL REFERENCES run(id),
  round     INTEGER NOT NULL,
  key       TEXT NOT NULL,
  value     REAL,
  PRIMARY KEY (run_id, round, key)
);

-- Imported records tunekit cannot interpret (unknown templates, other
-- targets), kept verbatim and reported rather than dropped. (v2)
CREATE TABLE foreign_record (
  id        INTEGER PRIMARY KEY,
  format    TEXT NOT NULL,          -- autotvm, kernel-tuner
  source    TEXT NOT NULL,          -- file it came from
  line      INTEGER,                -- line (or entry) in that file
  reason    TEXT NOT NULL,
  text      TEXT NOT NULL,          -- the record as it was
  run_id    INTEGER REFERENCES run(id),
  UNIQUE (format, text)
);

CREATE TABLE measurement (
  id        INTEGER PRIMARY KEY,
  config_id INTEGER NOT NULL REFERENCES config(id),
  hardware_id INTEGER NOT NULL REFERENCES hardware(id),
  run_id    INTEGER REFERENCES run(id),
  trial     INTEGER,                -- 0-based order within its run
  valid     INTEGER NOT NULL,       -- 1 if checked correct and timed
  error     INTEGER NOT NULL,       -- AutoTVM MeasureErrorNo: 0 none, 1 invalid config,
                                    -- 2 compile error, 3 device compile error, 4 runtime
                                    -- crash, 5 wrong answer, 6 compile timeout, 7 run
                                    -- timeout, 8 unknown; tunekit's own: 9 memory
                                    -- limit, 10 forbidden syscall
  message   TEXT,                   -- reason when invalid
  mean      REAL,                   -- seconds per call, mean over repeats
  std       REAL,                   -- standard deviation over repeats
  median    REAL,                   -- median over repeats: the latency tunekit reports
  number    INTEGER,                -- calls per repeat
  nrepeat   INTEGER,                -- repeats kept in times
  times     BLOB,                   -- zlib(float64[nrepeat]) seconds per call of each repeat
  compile_s REAL,                   -- compile time (0 if cached)
  at        REAL NOT NULL,          -- when measured
  load      REAL,                   -- 1-minute load average per online CPU just before
                                    -- the timed runs; NULL if unknown (v3)
  bounded   INTEGER NOT NULL DEFAULT 0 -- 1: tune's bounded timing stopped after the
                                    -- first timed repeat, already slower than the
                                    -- bound (tune --bound): nrepeat 1, a real but
                                    -- single timing; never a task's best (v4)
);
CREATE INDEX measurement_config ON measurement(config_id, hardware_id);
CREATE INDEX measurement_run ON measurement(run_id, trial);
CREATE INDEX measurement_hw ON measurement(hardware_id, valid);

CREATE TABLE feature (
  config_id INTEGER NOT NULL REFERENCES config(id),
  kind      TEXT NOT NULL,          -- knob, itervar, curve, ...
  version   INTEGER NOT NULL,
  n         INTEGER NOT NULL,       -- number of float32 values
  data      BLOB NOT NULL,          -- zlib(float32[n])
  PRIMARY KEY (config_id, kind, version)
);

CREATE TABLE model (
  id        INTEGER PRIMARY KEY,
  kind      TEXT NOT NULL,
  hardware_id INTEGER REFERENCES hardware(id),
  created   REAL NOT NULL,
  meta      TEXT,                   -- key=value lines describing the model
  data      BLOB                    -- the model file contents
);
