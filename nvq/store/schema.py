"""queue.db's schema: every migration, in order, and the step that applies them.

Each entry of `MIGRATIONS` migrates from version i to i+1; the list only ever grows and
no entry is ever edited, so a queue.db written by any earlier nvq opens here.
"""

from __future__ import annotations

import sqlite3

from nvq.errors import Internal

SCHEMA_VERSION = 27

MIGRATIONS: list[str] = [
    # 1: jobs, their events, nodes and the kills owed to them.
    """
    CREATE TABLE jobs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        name TEXT NOT NULL,
        state TEXT NOT NULL,
        command TEXT NOT NULL,
        user TEXT NOT NULL,
        submitter TEXT NOT NULL,
        created_at REAL NOT NULL,
        gpus_requested INTEGER NOT NULL,
        vram_mb INTEGER NOT NULL,
        node_request TEXT,
        priority INTEGER NOT NULL,
        timeout REAL,
        env TEXT NOT NULL,
        workdir TEXT,
        tags TEXT NOT NULL,
        note TEXT NOT NULL,
        after TEXT NOT NULL,
        after_any TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        node TEXT,
        gpus TEXT NOT NULL,
        pid INTEGER,
        dispatched_at REAL,
        started_at REAL,
        ended_at REAL,
        exit_code INTEGER,
        signal INTEGER,
        reason TEXT,
        progress TEXT,
        stderr_tail TEXT,
        result TEXT
    );
    CREATE INDEX jobs_by_state ON jobs(state);
    CREATE TABLE events (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        time REAL NOT NULL,
        kind TEXT NOT NULL,
        job_id INTEGER,
        node TEXT,
        data TEXT NOT NULL
    );
    CREATE INDEX events_by_job ON events(job_id);
    CREATE TABLE nodes (
        name TEXT PRIMARY KEY,
        journal_id TEXT NOT NULL DEFAULT '',
        applied_seq INTEGER NOT NULL DEFAULT 0,
        facts TEXT,
        last_seen REAL,
        drained INTEGER NOT NULL DEFAULT 0,
        ignored INTEGER NOT NULL DEFAULT 0
    );
    CREATE TABLE reaps (
        job_id INTEGER NOT NULL,
        attempt INTEGER NOT NULL,
        node TEXT NOT NULL,
        reason TEXT NOT NULL,
        PRIMARY KEY (job_id, attempt)
    );
    """,
    # 2: scheduling policy — dispatch rank, retries, CUDA/memory needs, arrays, lanes.
    """
    ALTER TABLE jobs ADD COLUMN rank REAL NOT NULL DEFAULT 0;
    UPDATE jobs SET rank = created_at;
    ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN cuda TEXT;
    ALTER TABLE jobs ADD COLUMN memory_mb INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE jobs ADD COLUMN array_id INTEGER;
    ALTER TABLE jobs ADD COLUMN array_index INTEGER;
    ALTER TABLE jobs ADD COLUMN array_limit INTEGER;
    ALTER TABLE jobs ADD COLUMN lane TEXT;
    ALTER TABLE jobs ADD COLUMN lane_pos REAL;
    CREATE INDEX jobs_by_array ON jobs(array_id);
    CREATE TABLE lanes (
        name TEXT PRIMARY KEY,
        paused INTEGER NOT NULL DEFAULT 0
    );
    """,
    # 3: operating the queue — alerts, the notification outbox, meta (last backup),
    # per-job e-mail preferences.
    """
    CREATE TABLE alerts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        time REAL NOT NULL,
        kind TEXT NOT NULL,
        severity TEXT NOT NULL,
        job_id INTEGER,
        node TEXT,
        attempt INTEGER NOT NULL DEFAULT 0,
        key TEXT NOT NULL UNIQUE,
        message TEXT NOT NULL,
        detail TEXT,
        acked_at REAL,
        acked_by TEXT
    );
    CREATE INDEX alerts_open ON alerts(acked_at);
    CREATE TABLE outbox (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        created_at REAL NOT NULL,
        channel TEXT NOT NULL,
        key TEXT NOT NULL UNIQUE,
        payload TEXT NOT NULL,
        delivered_at REAL,
        attempts INTEGER NOT NULL DEFAULT 0,
        next_try REAL NOT NULL,
        last_error TEXT,
        last_error_at REAL
    );
    CREATE INDEX outbox_due ON outbox(delivered_at, next_try);
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    ALTER TABLE jobs ADD COLUMN email_on_success TEXT NOT NULL DEFAULT 'null';
    ALTER TABLE jobs ADD COLUMN email_on_failure TEXT NOT NULL DEFAULT 'null'
""",
    # 4: machines that come and go — reassignment options per job, a node's busy mode
    # set by hand, and the owners who forbade their own jobs on their busy nodes.
    """
ALTER TABLE jobs ADD COLUMN max_runtime REAL;
ALTER TABLE jobs ADD COLUMN no_reassign TEXT NOT NULL DEFAULT 'false';
CREATE TABLE node_busy (
    name TEXT PRIMARY KEY,
    mode TEXT NOT NULL
);
CREATE TABLE busy_forbid (
    user TEXT PRIMARY KEY
);
""",
    # 5: a down-sampled history of each card, one point a minute for 7 days (the Nodes
    # page's chart) — see nvq.store.gpu_history.
    """
CREATE TABLE gpu_history (
    time REAL NOT NULL,
    node TEXT NOT NULL,
    gpu INTEGER NOT NULL,
    mem_total_mb INTEGER NOT NULL,
    foreign_mb INTEGER NOT NULL,
    queue_mb INTEGER NOT NULL,
    reserved_mb INTEGER NOT NULL,
    util_percent INTEGER,
    PRIMARY KEY (node, gpu, time)
);
CREATE INDEX gpu_history_by_time ON gpu_history(time);
""",
    # 6: dispatch rank is a sequence (a job's id at insert), not its submit time:
    # renumber every rank 1..N in its current order, so jobs keep their places and
    # every later job (id > N) comes after them.
    """
CREATE TEMP TABLE rank_order (id INTEGER PRIMARY KEY, seq REAL NOT NULL);
INSERT INTO rank_order SELECT id, ROW_NUMBER() OVER (ORDER BY rank, id) FROM jobs;
UPDATE jobs SET rank = (SELECT seq FROM rank_order WHERE rank_order.id = jobs.id);
DROP TABLE rank_order
""",
    # 7: who a queue and an attempt are to the runners — the queue's random id (kept
    # in its backups), each attempt's nonce — and what a runner could not keep of a
    # job's output.
    """
ALTER TABLE jobs ADD COLUMN nonce TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN result_error TEXT;
ALTER TABLE jobs ADD COLUMN log_truncated TEXT NOT NULL DEFAULT 'false';
INSERT OR IGNORE INTO meta (key, value) VALUES ('queue_id', lower(hex(randomblob(8))));
""",
    # 8: the job's world — submit directory, captured environment, snapshot, setup.
    """
ALTER TABLE jobs ADD COLUMN cwd TEXT;
ALTER TABLE jobs ADD COLUMN env_captured TEXT NOT NULL DEFAULT 'null';
ALTER TABLE jobs ADD COLUMN manifest_id TEXT;
ALTER TABLE jobs ADD COLUMN subdir TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN in_place TEXT NOT NULL DEFAULT 'false';
ALTER TABLE jobs ADD COLUMN setup TEXT;
ALTER TABLE jobs ADD COLUMN setup_files TEXT NOT NULL DEFAULT '[]';
ALTER TABLE jobs ADD COLUMN env_dropped TEXT NOT NULL DEFAULT '[]';
""",
    # 9: `job ls --user` at a million jobs walks one user's rows of one state, newest
    # first (the rowid ends every index entry), instead of every row of that state.
    """
CREATE INDEX jobs_by_user ON jobs(user, state);
""",
    # 10: how many jobs are in each state, kept by triggers in the same transaction as
    # the change, so `queue status` reads nine rows instead of counting a million.
    """
CREATE TABLE job_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
INSERT INTO job_counts (state, n) SELECT state, COUNT(*) FROM jobs GROUP BY state;
CREATE TRIGGER job_counts_insert AFTER INSERT ON jobs BEGIN
    INSERT INTO job_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
CREATE TRIGGER job_counts_delete AFTER DELETE ON jobs BEGIN
    UPDATE job_counts SET n = n - 1 WHERE state = OLD.state;
END;
CREATE TRIGGER job_counts_update AFTER UPDATE OF state ON jobs
WHEN OLD.state IS NOT NEW.state BEGIN
    UPDATE job_counts SET n = n - 1 WHERE state = OLD.state;
    INSERT INTO job_counts (state, n) VALUES (NEW.state, 1)
        ON CONFLICT (state) DO UPDATE SET n = n + 1;
END;
""",
    # 11: the files a job created or changed in its working copy.
    """
ALTER TABLE jobs ADD COLUMN written TEXT NOT NULL DEFAULT '[]';
""",
    # 12: which endings spend a --retries restart (`--retries-on oom,lost`).
    """
ALTER TABLE jobs ADD COLUMN retries_on TEXT NOT NULL DEFAULT 'lost';
""",
    # 13: terminal sessions (`job shell`) and each attempt's port ($NVQ_PORT).
    """
ALTER TABLE jobs ADD COLUMN interactive TEXT NOT NULL DEFAULT 'false';
ALTER TABLE jobs ADD COLUMN port INTEGER;
""",
    # 14: sharing a lab — each account's decayed GPU-seconds (fair share), and every
    # ended attempt's use of cards (limits per rolling day, the usage report).
    """
CREATE TABLE usage (
    account TEXT PRIMARY KEY,
    gpu_seconds REAL NOT NULL,
    at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE charges (
    job_id INTEGER NOT NULL,
    attempt INTEGER NOT NULL,
    user TEXT NOT NULL,
    submitter TEXT NOT NULL,
    node TEXT,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    weight REAL NOT NULL,
    PRIMARY KEY (job_id, attempt)
);
CREATE INDEX charges_by_end ON charges(ended_at);
""",
    # 15: delayed start (`--begin`).
    """
ALTER TABLE jobs ADD COLUMN begin_at REAL;
""",
    # 16: what a job's webhooks hear of (`--notify-on`).
    """
ALTER TABLE jobs ADD COLUMN notify_on TEXT NOT NULL DEFAULT 'null';
""",
    # 17: the usage report — each charged attempt's whole cards, its dispatch and how
    # it ended; finished jobs by when they ended.
    """
ALTER TABLE charges ADD COLUMN cards INTEGER NOT NULL DEFAULT 0;
ALTER TABLE charges ADD COLUMN dispatched_at REAL;
ALTER TABLE charges ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
CREATE INDEX jobs_by_end ON jobs(ended_at);
""",
    # 18: jobs that run in a container image (`--image`).
    """
ALTER TABLE jobs ADD COLUMN image TEXT;
""",
    # 19: the image as the queue host saved it, for nodes that cannot pull it.
    """
ALTER TABLE jobs ADD COLUMN image_manifest TEXT;
""",
    # 20: which stream a job's output tail came from
    """
ALTER TABLE jobs ADD COLUMN stderr_tail_stream TEXT;
""",
    # 21: the signal sent before a job's end (`--signal SIG@DELAY`).
    """
ALTER TABLE jobs ADD COLUMN checkpoint_signal TEXT NOT NULL DEFAULT '';
""",
    # 22: an image job's image id, as the queue host found it (`job show`).
    """
ALTER TABLE jobs ADD COLUMN image_id TEXT;
""",
    # 23: jobs a more urgent one may stop (`--preemptible`).
    """
ALTER TABLE jobs ADD COLUMN preemptible TEXT NOT NULL DEFAULT 'false';
""",
    # 24: cards set aside for some users over a window (`nvq reserve`), and the jobs
    # that run in one (`--reservation`).
    """
CREATE TABLE reservations (
    name TEXT PRIMARY KEY,
    doc TEXT NOT NULL
);
ALTER TABLE jobs ADD COLUMN reservation TEXT;
""",
    # 25: the phase of a running job ("setup" while its --setup runs).
    """
ALTER TABLE jobs ADD COLUMN phase TEXT NOT NULL DEFAULT '';
""",
    # 26: jobs that asked for cards with nothing else on them (`--quiet`).
    """
ALTER TABLE jobs ADD COLUMN quiet TEXT NOT NULL DEFAULT 'false';
""",
    # 27: jobs cancelled, not held, when a prerequisite ends badly
    # (`--kill-on-invalid-dep`).
    """
ALTER TABLE jobs ADD COLUMN kill_on_invalid_dep TEXT NOT NULL DEFAULT 'false';
""",
]


class SchemaTooNew(Internal):
    """queue.db was written by a newer nvq: this one must not touch it."""


def migrate(conn: sqlite3.Connection) -> None:
    """Bring the database up to `SCHEMA_VERSION`, one transaction per version."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER)")
    row = conn.execute("SELECT version FROM schema_version").fetchone()
    version = row[0] if row else 0
    if version > SCHEMA_VERSION:
        raise SchemaTooNew(
            f"queue.db has schema version {version}, newer than this nvq knows "
            f"({SCHEMA_VERSION}); upgrade nvq"
        )
    for target in range(version + 1, SCHEMA_VERSION + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(MIGRATIONS[target - 1]):
                conn.execute(statement)
            conn.execute("DELETE FROM schema_version")
            conn.execute("INSERT INTO schema_version VALUES (?)", (target,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def _statements(script: str) -> list[str]:
    """`script` cut at each `;` that ends a statement (not at those inside a
    trigger's BEGIN … END)."""
    out: list[str] = []
    buf = ""
    for piece in script.split(";"):
        buf += piece + ";"
        if sqlite3.complete_statement(buf):
            if buf.strip(" \n;"):
                out.append(buf)
            buf = ""
    return out
