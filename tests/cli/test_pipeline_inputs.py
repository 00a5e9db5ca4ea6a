"""Data between steps: a job run `--after` another finds that job's artifacts at
`$NVQ_INPUTS/<id>/`, read-only, through the real CLI (prepare → train → eval)."""

from __future__ import annotations

from tests.cluster import Nvq

PREPARE = 'mkdir -p "$NVQ_ARTIFACTS/data" && echo "1 2 3" > "$NVQ_ARTIFACTS/data/train.txt"'
TRAIN = (
    'cat "$NVQ_INPUTS/{prep}/data/train.txt" && '
    '(touch "$NVQ_INPUTS/{prep}/data/x" 2>/dev/null && echo writable || echo read-only) && '
    'echo "model of $(cat "$NVQ_INPUTS/{prep}/data/train.txt")" > "$NVQ_ARTIFACTS/model.txt"'
)
EVAL = 'cat "$NVQ_INPUTS/{train}/model.txt"; ls "$NVQ_INPUTS"'


def test_each_step_reads_the_artifacts_of_the_step_before(nvq: Nvq) -> None:
    prep = nvq.submit("--gpus", "0", "--", PREPARE)["id"]
    train = nvq.submit("--gpus", "0", "--after", str(prep), "--",
                       TRAIN.format(prep=prep))["id"]
    evaluate = nvq.submit("--gpus", "0", "--after", str(train), "--",
                          EVAL.format(train=train))["id"]
    code, _ = nvq.wait(evaluate)
    assert code == 0, nvq.ok("job", "logs", str(evaluate)).out
    assert nvq.ok("job", "logs", str(train)).out == "1 2 3\nread-only\n"
    assert nvq.ok("job", "logs", str(evaluate)).out == f"model of 1 2 3\n{train}\n"
