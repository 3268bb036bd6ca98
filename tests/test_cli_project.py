"""``mcs-formats test DIR`` and ``mcs-formats schema`` on project folders made in tmp dirs
outside the repository: the first test through the real entry point (``python -m engine``),
the others through ``engine.cli.main`` in this process (conftest.run_cli), what it runs.

A folder holding a toy wire (``tests/toy/``, copied out) passes once its snapshots are
written, and its snapshot agrees with the toy's hand-written oracle; a deliberately broken
snapshot and a descriptor whose result depends on how the stream is split each fail with a
located message (file, line, chunk, JSON pointer).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import run_cli as mcs
from conftest import run_engine

import engine
from engine.cli import project
from engine.language.validate import schema_path

ROOT = Path(__file__).resolve().parent.parent
TOY = ROOT / "tests" / "toy"
SEED_LINE = re.compile(r"^seed (\d+) \(the random re-splits are drawn from it: --seed \1 ")


def toy_project(tmp_path: Path, descriptor: str | None = None) -> Path:
    """A project folder laid out as `new --dir` lays it out, holding the toy wire."""
    root = tmp_path / "proj"
    (root / "formats").mkdir(parents=True)
    golden = root / "tests" / "golden" / "toy_wire"
    golden.mkdir(parents=True)
    text = descriptor or (TOY / "toy_wire.yaml").read_text(encoding="utf-8")
    (root / "formats" / "toy_wire.yaml").write_text(text, encoding="utf-8")
    shutil.copy(TOY / "two_calls.jsonl", golden / "two_calls.jsonl")
    return root


STREAM = "proj/tests/golden/toy_wire/two_calls.jsonl"
SNAPSHOT = Path("proj/tests/golden/toy_wire/two_calls.expected.json")


def test_a_toy_wire_outside_the_repository_passes_once_its_snapshot_is_written(tmp_path):
    toy_project(tmp_path)

    missing = run_engine("test", "proj", cwd=tmp_path)
    assert missing.returncode == 1, missing.stdout + missing.stderr
    lines = missing.stdout.splitlines()
    assert SEED_LINE.match(lines[0]), lines[0]
    assert lines[1] == (
        f"{STREAM}: no snapshot two_calls.expected.json: "
        "`mcs-formats test proj --update` writes it (then review it)"
    )
    assert lines[-1] == "1 format, 1 stream: 1 failure (1 of the streams)"
    assert not (tmp_path / SNAPSHOT).exists()

    updated = mcs("test", "proj", "--update", cwd=tmp_path)
    assert updated.returncode == 0, updated.stdout
    assert f"wrote {SNAPSHOT} (review it)" in updated.stdout.splitlines()

    # What --update wrote is what the toy's documented oracle says the stream means.
    written = json.loads((tmp_path / SNAPSHOT).read_text(encoding="utf-8"))
    oracle = json.loads((TOY / "two_calls.expect.json").read_text(encoding="utf-8"))
    for key in ("message", "text", "stop_reason"):
        assert written[key] == oracle[key], key
    # Each call as the oracle states it, and the chunk after which it became runnable.
    assert [c.pop("ready_at") for c in written["calls"]] == [6, 8]
    assert written["calls"] == oracle["calls"]
    assert written["finished"] is True and written["skipped"] == []
    assert list(written) == list(project.SNAPSHOT_KEYS)

    passed = run_engine("test", "proj", cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout
    assert passed.stdout.splitlines()[1:] == ["1 format, 1 stream: all pass"]
    assert passed.stderr == ""

    again = mcs("test", "proj", "--update", cwd=tmp_path)  # nothing changed: nothing written
    assert again.returncode == 0 and "wrote" not in again.stdout


def _break(snapshot: Path, change) -> None:
    data = json.loads(snapshot.read_text(encoding="utf-8"))
    change(data)
    snapshot.write_text(json.dumps(data, indent=2), encoding="utf-8")


def test_a_broken_snapshot_fails_at_the_chunk_and_pointer_of_its_first_difference(tmp_path):
    toy_project(tmp_path)
    assert mcs("test", "proj", "--update", cwd=tmp_path).returncode == 0

    def argument(data):
        data["message"]["said"][1]["params"]["q"] = "dogs"
        data["calls"][0]["arguments"]["q"] = "dogs"

    _break(tmp_path / SNAPSHOT, argument)
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    # The first difference in document order; its value became final at chunk 7 (line 8,
    # the `end` that parses the object's arguments).
    assert result.stdout.splitlines()[1] == (
        f'{STREAM}:8: chunk 7: /message/said/1/params/q: the stream gives "cats", its snapshot '
        'two_calls.expected.json says "dogs"; if the change is meant, '
        "`mcs-formats test proj --update` rewrites it"
    )

    assert mcs("test", "proj", "--update", cwd=tmp_path).returncode == 0

    def stop_reason(data):
        data["stop_reason"] = "end_turn"

    _break(tmp_path / SNAPSHOT, stop_reason)
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.splitlines()[1].startswith(
        f'{STREAM}:10: chunk 9: /stop_reason: the stream gives "tools", its snapshot '
        'two_calls.expected.json says "end_turn"'
    )


def test_a_snapshot_that_lacks_a_key_or_is_not_json_fails(tmp_path):
    toy_project(tmp_path)
    assert mcs("test", "proj", "--update", cwd=tmp_path).returncode == 0
    _break(tmp_path / SNAPSHOT, lambda data: data.pop("usage"))
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    assert f"{SNAPSHOT}: a snapshot holds exactly the keys message, calls" in result.stdout

    (tmp_path / SNAPSHOT).write_text("{not json", encoding="utf-8")
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    assert f"{SNAPSHOT}: not a readable JSON snapshot" in result.stdout


# A descriptor whose result depends on the split: `set` keeps only the last fragment of
# each `say`, where `append` would concatenate them.
SPLIT_DEPENDENT = (TOY / "toy_wire.yaml").read_text(encoding="utf-8").replace(
    'say: [{append: {at: "said[n].words", from: words}}]',
    'say: [{append: {at: "said[n].words", from: words}}, {set: {at: "said[n].last", from: words}}]',
)


def test_a_result_that_depends_on_the_split_fails_the_resplit_check(tmp_path):
    assert (TOY / "toy_wire.yaml").read_text(encoding="utf-8") != SPLIT_DEPENDENT
    toy_project(tmp_path, SPLIT_DEPENDENT)
    result = mcs("test", "proj", "--update", "--seed", "7", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0].startswith("seed 7 ")
    # Located at the first chunk after which the stream as recorded and re-split differ.
    assert lines[1] == (
        f'{STREAM}:2: chunk 1: /message/said/0/last: re-split one character a piece gives " ", '
        'the stream as recorded "Let me "'
    )
    # --update still writes the snapshot (the stream as recorded); the check still fails.
    assert f"wrote {SNAPSHOT} (review it)" in lines
    again = mcs("test", "proj", "--seed", "7", cwd=tmp_path)
    assert again.returncode == 1 and again.stdout.splitlines()[1] == lines[1]


def test_the_random_resplits_are_seeded_and_can_fail_on_their_own(tmp_path):
    """After the one-character split come random ones, drawn from the printed seed: the same
    seed draws the same cuts, another seed others, and a failure of one names its seed."""
    toy = project.read_stream(TOY / "two_calls.jsonl")
    fields = engine.load_format(TOY / "toy_wire.yaml").streamed_fields()

    def drawn(seed: int) -> list:
        tries = list(project.splits(seed, "two_calls.jsonl"))
        assert tries[0][0] == "re-split one character a piece"
        return [project.resplit_groups(toy.events, fields, cuts) for _, cuts in tries[1:]]

    assert drawn(7) == drawn(7)
    assert drawn(7) != drawn(8)
    assert any(len(split) > len(toy.events) for split in map(_flat, drawn(7)))

    (tmp_path / "dependent.yaml").write_text(SPLIT_DEPENDENT.replace(
        "name: toy_wire", "name: dependent"), encoding="utf-8")
    strategy = engine.load_format(tmp_path / "dependent.yaml")
    observed = project.replay(strategy, toy)
    random_only = list(project.splits(7, "two_calls.jsonl"))[1:]
    findings = project.check_resplit(strategy, toy, observed, random_only)
    assert len(findings) == 1
    assert re.search(r": re-split \d of 3 \(seed 7\) gives ", str(findings[0])), findings[0]
    assert findings[0].pointer == "/message/said/0/last"


def _flat(groups: list) -> list:
    return [piece for group in groups for piece in group]


def test_an_invalid_descriptor_is_reported_where_it_is_wrong_and_its_streams_not_replayed(
    tmp_path,
):
    broken = (TOY / "toy_wire.yaml").read_text(encoding="utf-8").replace("name: tool", "nme: tool")
    toy_project(tmp_path, broken)
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    validated = mcs("validate", "proj/formats/toy_wire.yaml", cwd=tmp_path).stdout.splitlines()
    assert validated and lines[1 : 1 + len(validated)] == validated
    assert re.match(r"proj/formats/toy_wire\.yaml:\d+:\d+: /calls", validated[0])
    assert lines[1 + len(validated)] == (
        "proj/tests/golden/toy_wire: 1 stream(s) not replayed: proj/formats/toy_wire.yaml is "
        "invalid"
    )


def test_what_cannot_be_tested_is_a_failure_never_a_pass(tmp_path):
    root = toy_project(tmp_path)
    (root / "tests" / "golden" / "orphan").mkdir()
    (root / "tests" / "golden" / "toy_wire" / "bad.jsonl").write_text(
        '{"kind": "hello", "turn": {"said": []}}\n{"kind": \n', encoding="utf-8"
    )
    (root / "tests" / "golden" / "toy_wire" / "gone.expected.json").write_text("{}")
    (tmp_path / "empty").mkdir()
    result = mcs("test", "proj", "empty", "missing", "--update", cwd=tmp_path)
    assert result.returncode == 1
    out = result.stdout.splitlines()
    assert "proj/tests/golden/toy_wire/bad.jsonl:2: not JSON: Expecting value (column 10)" in out
    assert (
        "proj/tests/golden/toy_wire/gone.expected.json: a snapshot without its stream "
        "(gone.jsonl)" in out
    )
    assert "proj/tests/golden/orphan: no descriptor formats/orphan.yaml for these streams" in out
    assert (
        "empty: no descriptor (*.yaml, *.yml) in empty/formats: "
        "`mcs-formats new NAME --dir empty` scaffolds one" in out
    )
    assert "missing: no such folder" in out
    assert "Traceback" not in result.stderr

    # A descriptor without a stream tests nothing: a failure too.
    (root / "tests" / "golden" / "toy_wire" / "two_calls.jsonl").unlink()
    (root / "tests" / "golden" / "toy_wire" / "bad.jsonl").unlink()
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    assert (
        "proj/tests/golden/toy_wire: no stream (*.jsonl, *.sse, *.eventstream) for "
        "proj/formats/toy_wire.yaml: "
        "record one here" in result.stdout
    )


@pytest.mark.parametrize("argv", [["test"], ["test", "proj", "--seed", "x"], ["schema", "x"]])
def test_usage_errors_exit_2(tmp_path, argv):
    result = mcs(*argv, cwd=tmp_path)
    assert result.returncode == 2, result
    assert "usage:" in result.stderr


def test_schema_prints_the_installed_schemas_path_and_uri(tmp_path):
    path = mcs("schema", cwd=tmp_path)
    uri = mcs("schema", "--uri", cwd=tmp_path)
    assert path.returncode == uri.returncode == 0
    printed = Path(path.stdout.strip())
    assert printed.is_absolute() and printed == schema_path().resolve()
    assert json.loads(printed.read_text(encoding="utf-8"))["$schema"]
    assert uri.stdout.strip() == printed.as_uri()


def test_new_scaffolds_a_folder_that_test_passes_and_whose_header_resolves(tmp_path):
    assert mcs("new", "acme", "--dir", "work", cwd=tmp_path).returncode == 0
    descriptor = tmp_path / "work" / "formats" / "acme.yaml"
    header = descriptor.read_text(encoding="utf-8").splitlines()[0]
    match = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", header)
    assert match and match[1] == "../schemas/format.schema.json", header
    moved = shutil.move(tmp_path / "work", tmp_path / "elsewhere" / "work")
    schema = Path(moved) / "formats" / match[1]  # relative to the descriptor, as editors read it
    assert schema.read_bytes() == schema_path().read_bytes()
    shutil.move(moved, tmp_path / "work")
    assert (tmp_path / "work" / "tests" / "golden" / "acme" / "first.jsonl").is_file()
    assert mcs("test", "work", "--update", cwd=tmp_path).returncode == 0
    written = json.loads(
        (tmp_path / "work/tests/golden/acme/first.expected.json").read_text(encoding="utf-8")
    )
    assert written["calls"] == [
        {"name": "get_weather", "arguments": {"city": "Oslo"}, "id": "call_1", "ready_at": 2}
    ]
    assert written["text"] and written["finished"] and written["skipped"] == []
    assert mcs("test", "work", cwd=tmp_path).returncode == 0


# -- the first difference, as a pointer -----------------------------------------------------------


@pytest.mark.parametrize(
    ("want", "got", "found"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": True}, {"a": 1}, ("/a", True, 1)),  # JSON true is not 1
        ({"a": 1}, {"a": 1.0}, None),
        ({"a": [1, 2]}, {"a": [1]}, ("/a/1", 2, project.MISSING)),
        ({"a": 1}, {"a": 1, "b": 2}, ("/b", project.MISSING, 2)),
        ({"x/y": {"m~n": 1}}, {"x/y": {"m~n": 2}}, ("/x~1y/m~0n", 1, 2)),
        ({"a": {"b": 1}, "c": 1}, {"a": {"b": 2}, "c": 2}, ("/a/b", 1, 2)),
        ([], {}, ("", [], {})),
    ],
)
def test_first_difference(want, got, found):
    assert project.first_difference(want, got) == found
    if found:
        pointer = found[0]
        assert project.resolve(want, pointer) is found[1] or project.resolve(
            want, pointer
        ) == found[1]


# -- the repository suite's checks, outside the repository (issue 18, point 4) -------------------

GOLDEN = ROOT / "tests" / "golden"
MISTRAL = GOLDEN / "openai_chat" / "compat_mistral_vercel_tool_call.jsonl"


def _project(tmp_path: Path, name: str, descriptor: str, streams: dict[str, bytes]) -> Path:
    """A project folder holding one format and its streams (file name -> bytes)."""
    root = tmp_path / "proj"
    (root / "formats").mkdir(parents=True)
    (root / "formats" / f"{name}.yaml").write_text(descriptor, encoding="utf-8")
    golden = root / "tests" / "golden" / name
    golden.mkdir(parents=True)
    for file, data in streams.items():
        (golden / file).write_bytes(data)
    return root


MISTRAL_VARIANT = "name: mistral\ntitle: Mistral chat (streaming)\nextends: openai_chat\n"


def test_a_real_mistral_stream_of_a_variant_of_openai_chat_passes_right_after_update(tmp_path):
    """The call arrives whole in the chunk that carries finish_reason: the re-split keeps the
    finish on the last piece, and the variant's parent claiming its chunks is no failure (a
    variant is its parent's wire)."""
    _project(tmp_path, "mistral", MISTRAL_VARIANT, {MISTRAL.name: MISTRAL.read_bytes()})
    updated = mcs("test", "proj", "--update", cwd=tmp_path)
    assert updated.returncode == 0, updated.stdout
    passed = mcs("test", "proj", cwd=tmp_path)
    assert passed.returncode == 0, passed.stdout
    assert passed.stdout.splitlines()[-1] == "1 format, 1 stream: all pass"
    snapshot = json.loads(
        (tmp_path / "proj/tests/golden/mistral" / MISTRAL.name.replace(".jsonl", ".expected.json"))
        .read_text(encoding="utf-8")
    )
    # The snapshot records where each call became ready: the chunk carrying finish_reason.
    assert [c["ready_at"] for c in snapshot["calls"]] == [1]


def _copy_of_openai_chat(name: str) -> str:
    """openai_chat's descriptor as a project format of its own (not a variant): it claims
    every chunk openai_chat claims."""
    text = (ROOT / "formats" / "openai_chat.yaml").read_text(encoding="utf-8")
    return re.sub(r"(?m)^name: openai_chat$", f"name: {name}", text)


def test_a_format_that_claims_a_built_in_wires_chunks_fails_test(tmp_path):
    _project(tmp_path, "my_chat", _copy_of_openai_chat("my_chat"),
             {MISTRAL.name: MISTRAL.read_bytes()})
    result = mcs("test", "proj", "--update", cwd=tmp_path)
    assert result.returncode == 1, result.stdout
    stream = f"proj/tests/golden/my_chat/{MISTRAL.name}"
    assert result.stdout.splitlines()[1] == (
        f"{stream}:1: chunk 0: the built-in openai_chat claims this chunk too: with the "
        "built-ins loaded the stream resolves to openai_chat, not my_chat (make `recognize` "
        "specific to this wire, or `extends: openai_chat`)"
    )


def _sse(path: Path) -> bytes:
    """A JSON Lines stream as the SSE body a provider sends (data: lines, blank lines)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return "".join(f"data: {line}\n\n" for line in lines if line).encode("utf-8")


def test_sse_and_aws_event_stream_captures_in_a_golden_folder_are_streams(tmp_path):
    from engine.transport.eventstream import event_message

    bedrock = GOLDEN / "bedrock_converse" / "hand_parallel_tool_use_frames.jsonl"
    frames = b"".join(
        event_message(e.pop("_event"), e)
        for e in (json.loads(line) for line in bedrock.read_text(encoding="utf-8").splitlines())
    )
    text = "name: my_bedrock\ntitle: Bedrock, my way\nextends: bedrock_converse\n"
    root = _project(tmp_path, "my_bedrock", text, {"text.eventstream": frames})
    root2 = tmp_path / "proj2"
    shutil.copytree(root, root2)
    (root2 / "formats/my_bedrock.yaml").rename(root2 / "formats/mistral.yaml")
    (root2 / "formats/mistral.yaml").write_text(MISTRAL_VARIANT, encoding="utf-8")
    (root2 / "tests/golden/my_bedrock").rename(root2 / "tests/golden/mistral")
    (root2 / "tests/golden/mistral/text.eventstream").unlink()
    (root2 / "tests/golden/mistral/call.sse").write_bytes(_sse(MISTRAL))
    (root2 / "tests/golden/mistral/lines.jsonl").write_bytes(MISTRAL.read_bytes())

    updated = mcs("test", "proj", "proj2", "--update", cwd=tmp_path)
    assert updated.returncode == 0, updated.stdout
    assert updated.stdout.splitlines()[-1] == "2 formats, 3 streams: all pass"
    golden = tmp_path / "proj/tests/golden/my_bedrock"
    from_frames = json.loads((golden / "text.expected.json").read_text(encoding="utf-8"))
    assert len(from_frames["calls"]) == 2 and from_frames["finished"]
    mistral = tmp_path / "proj2/tests/golden/mistral"
    sse = json.loads((mistral / "call.expected.json").read_text(encoding="utf-8"))
    lines = json.loads((mistral / "lines.expected.json").read_text(encoding="utf-8"))
    assert sse == lines and [c["name"] for c in sse["calls"]] == ["weather"]
    assert mcs("test", "proj", "proj2", cwd=tmp_path).returncode == 0


def test_the_snapshot_records_when_each_call_became_ready_and_why_one_never_did(tmp_path):
    root = toy_project(tmp_path)
    cut = [line for line in (TOY / "two_calls.jsonl").read_text().splitlines() if line][:6]
    (root / "tests/golden/toy_wire/cut.jsonl").write_text("\n".join(cut) + "\n")
    assert mcs("test", "proj", "--update", cwd=tmp_path).returncode == 0
    whole = json.loads((tmp_path / SNAPSHOT).read_text(encoding="utf-8"))
    assert [(c["name"], c["ready_at"]) for c in whole["calls"]] == [("lookup", 6), ("ping", 8)]
    cut_snapshot = json.loads(
        (root / "tests/golden/toy_wire/cut.expected.json").read_text(encoding="utf-8")
    )
    assert [c["name"] for c in cut_snapshot["calls"]] == []
    assert [(c["name"], c["reason"]) for c in cut_snapshot["incomplete"]] == [
        ("lookup", "cut"), ("ping", "cut")]


def test_a_text_difference_names_the_chunk_where_the_text_went_another_way(tmp_path):
    toy_project(tmp_path)
    assert mcs("test", "proj", "--update", cwd=tmp_path).returncode == 0
    _break(tmp_path / SNAPSHOT, lambda data: data.update(text="LetXme check."))
    result = mcs("test", "proj", cwd=tmp_path)
    assert result.returncode == 1
    # "Let me " (chunk 1, line 2) is where the text stops being what the snapshot says.
    assert result.stdout.splitlines()[1].startswith(f"{STREAM}:2: chunk 1: /text: ")


def test_a_broken_project_outside_the_repository_reports_what_the_in_repo_checks_report(tmp_path):
    """Acceptance (issue 18): the same problems as the repository's own suite. The project
    holds a format that claims a built-in wire's chunks and one whose result depends on how
    the stream is split; each in-repo check (tests/test_properties.py calls these functions
    on every built-in) finds its problem, and `mcs-formats test` prints exactly that finding."""
    from test_properties import WIRES

    from engine.cli.resplit import every_character

    root = toy_project(tmp_path, SPLIT_DEPENDENT)
    (root / "formats" / "my_chat.yaml").write_text(_copy_of_openai_chat("my_chat"))
    (root / "tests/golden/my_chat").mkdir()
    shutil.copy(MISTRAL, root / "tests/golden/my_chat" / MISTRAL.name)
    result = mcs("test", "proj", "--update", "--seed", "7", cwd=tmp_path)
    assert result.returncode == 1
    printed = result.stdout.splitlines()

    chat = engine.load_format(root / "formats" / "my_chat.yaml")
    toy = engine.load_format(root / "formats" / "toy_wire.yaml")
    with pytest.MonkeyPatch.context() as patch:  # files named as the command names them
        patch.chdir(tmp_path)
        chat_stream = project.read_stream(Path("proj/tests/golden/my_chat") / MISTRAL.name)
        toy_stream = project.read_stream(Path(STREAM))
        claims = project.check_claims(chat_stream, "my_chat", [*WIRES, chat])
        split = project.check_resplit(toy, toy_stream, project.replay(toy, toy_stream),
                                      [("re-split one character a piece", every_character)])
        rebuilt = project.check_never_rebuilt(toy_stream, [toy])
    assert claims and split and not rebuilt
    assert [str(f) for f in [*claims, *split]] == [
        line for line in printed if line.startswith("proj/") and "wrote" not in line
    ]


def test_a_stale_copy_of_the_schema_fails_test_and_update_rewrites_it(tmp_path):
    assert mcs("new", "acme", "--dir", "work", cwd=tmp_path).returncode == 0
    assert mcs("test", "work", "--update", cwd=tmp_path).returncode == 0
    copy = tmp_path / "work" / "schemas" / "format.schema.json"
    copy.write_text("{}", encoding="utf-8")
    stale = mcs("test", "work", cwd=tmp_path)
    assert stale.returncode == 1
    assert stale.stdout.splitlines()[1] == (
        "work/schemas/format.schema.json: not the installed schema (the descriptors' "
        "$schema header names this copy): `mcs-formats test work --update` rewrites it"
    )
    assert mcs("test", "work", "--update", cwd=tmp_path).returncode == 0
    assert copy.read_bytes() == schema_path().read_bytes()
