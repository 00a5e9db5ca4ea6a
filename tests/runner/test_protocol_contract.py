"""The wire contract is one module and complete: every tagged message is in the union
of its direction (else the other side cannot decode it), every public name is in
`__all__`, and every message survives a frame unchanged."""

from __future__ import annotations

import inspect
import typing

import msgspec

import nvq_runner.protocol as p


def _tagged() -> dict[str, type[msgspec.Struct]]:
    return {
        name: obj
        for name, obj in vars(p).items()
        if inspect.isclass(obj)
        and issubclass(obj, msgspec.Struct)
        and obj.__module__ == p.__name__
        and obj.__struct_config__.tag is not None
    }


def test_every_tagged_message_is_in_exactly_one_union() -> None:
    runner = set(typing.get_args(p.RunnerMsg))
    daemon = set(typing.get_args(p.DaemonMsg))
    assert runner & daemon == set()
    assert set(_tagged().values()) == runner | daemon
    assert set(typing.get_args(p.JournaledEvent)) <= runner


def test_every_public_name_is_exported() -> None:
    defined = {
        name
        for name, obj in vars(p).items()
        if not name.startswith("_")
        and not inspect.ismodule(obj)
        and getattr(obj, "__module__", p.__name__) in (p.__name__, "typing")
        and name not in ("Literal", "Optional", "Union", "annotations", "TreePaths")
    }
    assert set(p.__all__) == defined


def test_tags_are_unique_across_both_directions() -> None:
    tags = [cls.__struct_config__.tag for cls in _tagged().values()]
    assert len(tags) == len(set(tags))


def test_each_message_crosses_a_frame() -> None:
    samples: list[p.RunnerMsg | p.DaemonMsg] = [
        p.RelayUp(req=1, job_id=2, attempt=1, data=b"x"),
        p.ChunkBytes(req=3, data=[b"ab"]),
        p.NodeImages(images=[p.CachedImage(id="f" * 64, ref="a:1", size=9)]),
        p.SyncWanted(job_id=4, attempt=2),
        p.ArtifactsTreeReply(req=5, job_id=4, sources=[p.ChunkSource("0" * 64, "a", 0, 2)]),
    ]
    for msg in samples[:-1]:
        framed = p.FrameReader().feed(p.encode_frame(msg))
        assert [p.decode_runner_payload(b) for b in framed] == [msg]
    downs: list[p.DaemonMsg] = [
        p.RelayDown(req=1, eof=True),
        p.ReadChunks(req=3, job_id=4, path="a", ranges=[(0, 2)]),
        p.StageImage(req=6, image="a:1", image_manifest="0" * 64),
    ]
    for down in downs:
        framed = p.FrameReader().feed(p.encode_frame(down))
        assert [p.decode_daemon_payload(b) for b in framed] == [down]
    reply = samples[-1]
    assert p.decode_runner_payload(p.encode_payload(reply)) == reply
