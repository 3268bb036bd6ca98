"""The README's "Authoring a new format" steps, run as written, in a temp dir outside the
repository, through the real console script (``mcs-formats``, with this checkout first on
``PYTHONPATH``).

The blocks are those marked ``<!-- readme-example: authoring-... -->``: the shell steps
(each command run by bash in turn, ``cd`` followed, each with the exit status the README's
comment gives it), the failure the README shows (reproduced by the edit it names), and the
Python client that loads the folder's format into a buffer and a driver. A change to the
README's steps that no longer works fails here.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

import engine

# One worker runs this module (pyproject's --dist loadgroup): its module fixture is built once.
pytestmark = pytest.mark.xdist_group("readme_authoring")


ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"

_BLOCK = re.compile(
    r"^<!--\s*readme-example:\s*(?P<name>authoring-[\w-]+)\s*-->\n"
    r"```(?P<lang>\w+)\n(?P<code>.*?)^```$",
    re.MULTILINE | re.DOTALL,
)

# Each shell block's commands and the exit status each must have (`cd` is followed, not run).
STEPS = {
    "authoring-steps": [0, None, 0, 0, 1, 0, 0],
    "authoring-record": [0, 0],
}
BLOCKS = {*STEPS, "authoring-failure", "authoring-client"}


@dataclass(frozen=True)
class Block:
    name: str
    lang: str
    code: str
    line: int


def authoring_blocks() -> dict[str, Block]:
    text = README.read_text(encoding="utf-8")
    blocks: dict[str, Block] = {}
    for match in _BLOCK.finditer(text):
        assert match["name"] not in blocks, f"README.md marks two blocks {match['name']}"
        line = text.count("\n", 0, match.start("code")) + 1
        blocks[match["name"]] = Block(match["name"], match["lang"], match["code"], line)
    return blocks


def commands(code: str) -> list[str]:
    """A shell block's commands, one a line, a here-document kept with its command."""
    out: list[str] = []
    lines = iter(code.splitlines())
    for line in lines:
        if not line.strip():
            continue
        heredoc = re.search(r"<<-?'?(\w+)'?", line)
        if heredoc:
            body = []
            for more in lines:
                body.append(more)
                if more.strip() == heredoc[1]:
                    break
            line = "\n".join([line, *body])
        out.append(line)
    return out


def _environment() -> dict[str, str]:
    """The console script first on PATH, this checkout first on PYTHONPATH."""
    beside = Path(sys.executable).parent / "mcs-formats"
    script = str(beside) if beside.exists() else shutil.which("mcs-formats")
    assert script, "the console script mcs-formats is not installed (pip install -e '.[test]')"
    path = os.pathsep.join([str(Path(script).parent), os.environ.get("PATH", "")])
    return dict(os.environ, PATH=path, PYTHONPATH=str(ROOT), PYTHONIOENCODING="utf-8",
                NO_COLOR="1")


@dataclass
class Shell:
    """Runs a README shell block's commands in turn, from ``cwd``, following its ``cd``."""

    cwd: Path
    env: dict

    def run(self, block: Block) -> list[subprocess.CompletedProcess]:
        wanted = STEPS[block.name]
        steps = commands(block.code)
        assert len(steps) == len(wanted), f"{block.name}: {steps}"
        results = []
        for step, status in zip(steps, wanted, strict=True):
            if step.startswith("cd "):
                self.cwd = self.cwd / step.split("#")[0].split()[1]
                assert status is None and self.cwd.is_dir(), step
                continue
            result = subprocess.run(["bash", "-c", step], cwd=self.cwd, env=self.env,
                                    capture_output=True, text=True, encoding="utf-8",
                                    timeout=120)
            where = f"README.md:{block.line}: {step!r}\n{result.stdout}{result.stderr}"
            assert result.returncode == status, where
            assert "Traceback" not in result.stderr, where
            results.append(result)
        return results


@pytest.fixture(scope="module")
def walked(tmp_path_factory):
    """The README's authoring steps, walked once: the folder they made and what they printed."""
    shell = Shell(tmp_path_factory.mktemp("authoring"), _environment())
    blocks = authoring_blocks()
    steps = shell.run(blocks["authoring-steps"])
    record = shell.run(blocks["authoring-record"])
    return shell, steps, record


def test_every_authoring_block_is_checked():
    assert set(authoring_blocks()) == BLOCKS


def test_the_steps_scaffold_test_fail_update_and_pass(walked):
    shell, steps, record = walked
    new, validate, replay, missing, update, passed = steps
    folder = shell.cwd
    assert (folder / "formats" / "my_wire.yaml").is_file()
    assert "created" in new.stdout and validate.stdout == ""
    assert "get_weather" in replay.stdout  # the sample's call, as the skeleton reads it
    assert "no snapshot first.expected.json: `mcs-formats test . --update` writes it" in (
        missing.stdout
    )
    assert "wrote tests/golden/my_wire/first.expected.json (review it)" in update.stdout
    assert passed.stdout.splitlines()[-1] == "1 format, 1 stream: all pass"
    written, tested = record
    assert "wrote tests/golden/my_wire/text_only.expected.json (review it)" in tested.stdout
    snapshot = json.loads(
        (folder / "tests/golden/my_wire/text_only.expected.json").read_text(encoding="utf-8")
    )
    assert snapshot["text"] == "Hello, world." and snapshot["stop_reason"] == "end_turn"


def test_the_failure_shown_is_what_the_edit_it_names_prints(walked):
    shell = walked[0]
    descriptor = shell.cwd / "formats" / "my_wire.yaml"
    original = descriptor.read_text(encoding="utf-8")
    text_rule = "      - append: {at: content, from: delta}"
    assert original.count(text_rule) == 1
    descriptor.write_text(original.replace(text_rule, "      - set: {at: content, from: delta}"),
                          encoding="utf-8")
    try:
        result = subprocess.run(["mcs-formats", "test", "."], cwd=shell.cwd, env=shell.env,
                                capture_output=True, text=True, encoding="utf-8", timeout=120)
    finally:
        descriptor.write_text(original, encoding="utf-8")
    assert result.returncode == 1
    shown = authoring_blocks()["authoring-failure"].code
    seed = re.compile(r"seed \d+ \(the random re-splits are drawn from it: --seed \d+ ")
    assert seed.sub("seed N ", result.stdout) == seed.sub("seed N ", shown)


def test_the_client_reads_the_folders_format_with_a_buffer_and_a_driver(
    walked, monkeypatch, capsys
):
    shell = walked[0]
    block = authoring_blocks()["authoring-client"]
    for word in ("loopback", "127.0.0.1", "monkeypatch", "pytest"):
        assert word not in block.code, f"the README's client mentions {word!r}"
    monkeypatch.chdir(shell.cwd)
    namespace: dict = {"__name__": "__readme__"}
    tree = ast.parse(block.code, filename=str(README))
    ast.increment_lineno(tree, block.line - 1)
    capsys.readouterr()
    exec(compile(tree, str(README), "exec"), namespace)
    printed = capsys.readouterr().out

    my_wire, driver = namespace["my_wire"], namespace["driver"]
    assert my_wire.name == "my_wire"
    assert driver.extraction_strategies() == [my_wire]
    assert namespace["buf"].format == "my_wire"
    call = engine.ExtractedCall("get_weather", {"city": "Oslo"}, "call_1")
    text = "Let me check the weather. "
    # The buffer alone, then the driver's loop: the text once, then the last print's newline.
    assert printed == f"{text} {[call]}\n{text}\n"
    assert namespace["tools"]["tools"][0]["name"] == "get_weather"
    user, assistant, result = namespace["messages"]
    assert user["role"] == "user"
    assert assistant["tool_calls"][0]["id"] == "call_1" and assistant["content"] == text
    assert result == {"role": "tool", "tool_call_id": "call_1",
                      "content": json.dumps({"sky": "sunny", "celsius": 21})}
