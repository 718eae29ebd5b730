"""Two processes writing the same memory database at once lose no writes and ingest nothing twice."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from ctxagent.context.events import UserData
from ctxagent.context.memory import MemoryStore

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from ctxagent.context.history import SessionLog
    from ctxagent.context.memory import MemoryStore

    db, name, go, log_path = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4])
    store = MemoryStore.open(db)
    events = SessionLog.load(log_path).events
    deadline = time.time() + 20
    while not go.exists() and time.time() < deadline:
        time.sleep(0.005)
    for i in range(120):
        store.add(f"{name} wrote item {i} of the batch", "note", session=name, turn=i, merge=False)
        if i % 10 == 0:
            store.ingest(events, "shared")  # both processes ingest the same log: each event once
    store.close()
    print("done")
    """
)


def test_two_processes_write_the_same_db_without_losing_writes(tmp_path: Path) -> None:
    db = tmp_path / ".ctxagent" / "memory.db"
    MemoryStore.open(db).close()
    from ctxagent.context.history import SessionLog

    log = SessionLog.create(tmp_path / "sessions", "shared")
    for turn in range(1, 21):
        log.append(UserData(text=f"Never break feature_{turn} in module_{turn}.py", turn=turn))
    log.close()
    go = tmp_path / "go"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(db), name, str(go), str(log.path)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name in ("alpha", "bravo")
    ]
    go.touch()
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out.strip() == "done"
    store = MemoryStore.open(db)
    notes = store.list(type="note")
    assert len(notes) == 240
    assert {(r.session, r.turn) for r in notes} == {(n, i) for n in ("alpha", "bravo") for i in range(120)}
    constraints = store.list(type="constraint")
    assert len(constraints) == 20 and all(r.confirmations == 1 for r in constraints)
    assert store.stats()["ingested_events"] == 20
