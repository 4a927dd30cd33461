-- FlashCore kernel cache and tuning store (SQLite). Embedded into the library at build time;
-- src/cache.c applies it to a new file and stamps PRAGMA user_version with FC_CACHE_SCHEMA_VERSION.

-- One compiled kernel per row. `key` hashes everything that changes the binary (generated
-- source, every template file it includes, NVRTC version, target arch, compile options, schema
-- version); `source_key` is the same hash without the NVRTC version, so a process with no NVRTC
-- can still find a cubin that any NVRTC compiled.
CREATE TABLE IF NOT EXISTS cubins (
    key           TEXT PRIMARY KEY,
    source_key    TEXT NOT NULL,
    name          TEXT NOT NULL,      -- readable variant name
    arch          TEXT NOT NULL,      -- sm_90a, sm_80, ...
    nvrtc_version TEXT NOT NULL,
    registers     INTEGER NOT NULL,   -- per thread, from ptxas -v
    smem_static   INTEGER NOT NULL,   -- bytes of static shared memory
    smem_dynamic  INTEGER NOT NULL,   -- bytes of dynamic shared memory the kernel launches with
    spill_stores  INTEGER NOT NULL,   -- bytes
    spill_loads   INTEGER NOT NULL,   -- bytes
    stack_bytes   INTEGER NOT NULL,
    compile_ms    REAL NOT NULL,
    cubin         BLOB NOT NULL,
    checksum      TEXT NOT NULL,      -- XXH3-64 of cubin, checked on every read
    created_at    TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX IF NOT EXISTS cubins_by_source_key ON cubins (source_key, created_at);

-- Every configuration the autotuner measured, not only the winner.
CREATE TABLE IF NOT EXISTS tuning_results (
    id           INTEGER PRIMARY KEY,
    gpu_name     TEXT NOT NULL,
    sm_count     INTEGER NOT NULL,
    driver       TEXT NOT NULL,
    kernel_set   TEXT NOT NULL,      -- hash of all kernel templates
    bucket       TEXT NOT NULL,      -- the problem's shape bucket
    variant      TEXT NOT NULL,      -- readable variant name
    median_ms    REAL NOT NULL,
    tflops       REAL NOT NULL,
    passed_check INTEGER NOT NULL,   -- the candidate's output matched the reference
    winner       INTEGER NOT NULL DEFAULT 0,
    measured_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    UNIQUE (gpu_name, sm_count, driver, kernel_set, bucket, variant)
);
