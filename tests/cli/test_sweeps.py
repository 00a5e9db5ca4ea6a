"""A sweep is one thing on the command line: its submit names the array and its
members, `job wait --array` waits for all of them, `job result --array` is the table
of every member's parameters and result, and `7[3]` names member 3 of array 7."""

from __future__ import annotations

from tests.cluster import Nvq

SWEEP = 'echo "lr {}"; echo "{\\"loss\\": {}, \\"ok\\": true}" > "$NVQ_JOB_DIR/result.json"'


def test_a_sweep_from_submit_to_its_results_table(nvq: Nvq) -> None:
    nvq.nodes_up()  # else the submit may be accepted unchecked, and its line says so
    r = nvq.ok("job", "submit", "--gpus", "0", "--array", "0-3", "--", SWEEP)
    first = nvq.json("job", "ls")["jobs"][0]["id"]
    ids = list(range(first, first + 4))
    assert r.out == f"submitted array {first}: jobs {first}–{first + 3} (4 members)\n"

    r = nvq.run("job", "wait", "--array", str(first), "--json")
    assert r.code == 0 and [j["id"] for j in r.json()["jobs"]] == ids

    table = nvq.json("job", "result", "--array", str(first))
    assert table["array"] == first
    assert [(m["id"], m["index"], m["state"]) for m in table["members"]] == [
        (i, n, "completed") for n, i in enumerate(ids)
    ]
    assert [m["result"] for m in table["members"]] == [{"loss": n, "ok": True} for n in range(4)]
    assert table["members"][2]["parameters"] == {
        "NVQ_ARRAY_INDEX": 2,
        "command": SWEEP.replace("{}", "2"),
    }
    csv = nvq.ok("job", "result", "--array", str(first), "--csv").out.splitlines()
    assert csv[0] == "id,index,state,command,loss,ok"
    assert csv[3].startswith(f"{ids[2]},2,completed,") and csv[3].endswith(",2,true")

    # member 2 by its place in the array, wherever an id goes
    assert nvq.json("job", "show", f"{first}[2]")["id"] == ids[2]
    assert nvq.ok("job", "logs", f"{first}[2]").out == "lr 2\n"
    missing = nvq.run("job", "show", f"{first}[9]")
    assert missing.code == 2
    assert missing.err == f"nvq: array {first} has no member 9 (indices: 0, 1, 2, 3)\n"


def test_an_array_submit_returns_the_array_as_json(nvq: Nvq) -> None:
    doc = nvq.submit("--gpus", "0", "--array", "1-3", "--", "true")
    assert doc == {"id": doc["id"], "ids": [doc["id"] + n for n in range(3)], "count": 3}
    code, done = nvq.wait(*doc["ids"])
    assert code == 0 and [j["array_index"] for j in done] == [1, 2, 3]


def test_an_array_whose_members_would_not_fit_in_one_reply_is_submitted(nvq: Nvq) -> None:
    # 40,000 members of ~2 KiB of environment each: far over one reply frame (64 MiB)
    # if the submit fetched its members to name them.
    gate = nvq.submit("--gpus", "0", "--", "sleep 600")
    pad = "x" * 2048
    doc = nvq.submit(
        "--gpus", "0", "--after", str(gate["id"]), "--env", f"PAD={pad}",
        "--array", "0-39999", "--", "true",
    )
    first = doc["id"]
    assert (doc["count"], doc["ids"]) == (40000, list(range(first, first + 40000)))
    last = nvq.show(first + 39999)
    assert (last["array_id"], last["array_index"], last["state"]) == (first, 39999, "pending")
