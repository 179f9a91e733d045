"""The `pyrite` command's one error path (pyrite/cli_errors.py, pyrite/argtypes.py): every
mistake is one line on stderr, `pyrite <command>: error: ...`, with exit status 2 and no
traceback. Each case runs `pyrite.cli.main` in-process and fails before any real work starts."""

from __future__ import annotations

import argparse
import errno
import json
from pathlib import Path

import pytest

from pyrite import cli
from pyrite.argtypes import LEARNING_RATE, Range, check_fields, device_names, device_problem
from pyrite.cli_errors import describe
from pyrite.errors import ConfigError

MNIST_CONFIG = {"model": {"num_classes": 10, "hidden_size": 512, "dropout": 0.5},
                "optimizer": {}}

# (argv, the command's name in the message, words the message must hold); {tmp} is a new folder
CASES = [
    (["infer", "mnist", "--index", "99999"], "infer mnist", "must be an integer in [0, 9999]"),
    (["infer", "mnist", "--index", "-1"], "infer mnist", "got -1"),
    (["infer", "mnist", "--index", "x"], "infer mnist", "got 'x'"),
    (["infer", "mnist", "--device", "cuda"], "infer mnist", "unknown device 'cuda'"),
    (["infer", "mnist", "--device", "foo<numpy>"], "infer mnist", "unknown decorator 'foo'"),
    (["infer", "mnist", "--artifacts", "/nonexistent"], "infer mnist", "no such folder"),
    (["infer", "mnist", "--artifacts", "{tmp}"], "infer mnist", "holds no trained model"),
    (["infer", "mnist", "--record", "{tmp}/nope.bin"], "infer mnist", "no such file"),
    (["infer", "mnist", "--record", "{tmp}/junk.bin"], "infer mnist", "junk.bin"),
    (["train", "mnist", "--epochs", "0"], "train mnist", "--epochs: must be an integer"),
    (["train", "mnist", "--epochs", "1e3"], "train mnist", "got '1e3'"),
    (["train", "mnist", "--lr", "-1"], "train mnist", "--lr: must be a number in (0, 1]"),
    (["train", "mnist", "--lr", "0"], "train mnist", "got 0.0"),
    (["train", "mnist", "--lr", "nan"], "train mnist", "got nan"),
    (["train", "mnist", "--lr", "inf"], "train mnist", "got inf"),
    (["train", "mnist", "--lr", "1e6"], "train mnist", "got 1000000.0"),
    (["train", "mnist", "--seed", "-1"], "train mnist", "--seed: must be an integer in [0, "),
    (["train", "mnist", "--seed", "9" * 5000], "train mnist", "characters"),
    (["train", "mnist", "--limit", "0"], "train mnist", "--limit: must be an integer >= 1"),
    (["train", "mnist", "--resume", "0"], "train mnist", "--resume"),
    (["train", "mnist", "--device", "bogus"], "train mnist", "unknown device 'bogus'"),
    (["train", "mnist", "--dashboard-port", "70000"], "train mnist", "[0, 65535]"),
    (["train", "mnist", "--artifacts", ""], "train mnist", "an empty path"),
    (["train", "mnist", "--config", "{tmp}/batch.json", "--artifacts", "{tmp}/run"],
     "train mnist", "TrainingConfig.batch_size: expected an integer, got 'abc'"),
    (["train", "mnist", "--config", "{tmp}/lr.json", "--artifacts", "{tmp}/run"],
     "train mnist", "TrainingConfig.learning_rate must be a number in (0, 1], got -1"),
    (["train", "mnist", "--config", "{tmp}/epochs.json", "--artifacts", "{tmp}/run"],
     "train mnist", "TrainingConfig.num_epochs: expected an integer, got True"),
    (["train", "mnist", "--config", "{tmp}/nope.json", "--artifacts", "{tmp}/run"],
     "train mnist", "no such config file"),
    (["train", "mnist", "--config", "{tmp}/junk.bin", "--artifacts", "{tmp}/run"],
     "train mnist", "not valid JSON"),
    (["train", "charlm", "--batch-size", "0"], "train charlm", "--batch-size"),
    (["train", "charlm", "--steps-per-epoch", "-3"], "train charlm", "--steps-per-epoch"),
    (["train", "charlm", "--lr", "2"], "train charlm", "--lr"),
    (["generate", "charlm", "--tokens", "-5"], "generate charlm", "--tokens"),
    (["generate", "charlm", "--tokens", "0"], "generate charlm", "--tokens"),
    (["generate", "charlm", "--temperature", "nan"], "generate charlm", "got nan"),
    (["generate", "charlm", "--temperature", "-1"], "generate charlm", "--temperature"),
    (["generate", "charlm", "--top-k", "0"], "generate charlm", "--top-k"),
    (["generate", "charlm", "--seed", "x"], "generate charlm", "--seed"),
    (["generate", "charlm", "--record", "{tmp}/nope.bin"], "generate charlm", "nope"),
    (["generate", "charlm", "--prompt", "caf\u00e9", "--tokens", "1"], "generate charlm",
     "does not know"),
    (["infer", "squeezenet", "{tmp}/nope.png"], "infer squeezenet", "no such file"),
    (["infer", "squeezenet", "{tmp}"], "infer squeezenet", "is not a file"),
    (["infer", "squeezenet", "x.png", "--top", "0"], "infer squeezenet", "--top"),
    (["infer", "squeezenet", "x.png", "--top", "-1"], "infer squeezenet", "--top"),
    (["infer", "squeezenet", "x.png", "--top", "5000"], "infer squeezenet", "[1, 1000]"),
    (["infer", "squeezenet", "x.png", "--device", "cuda"], "infer squeezenet", "cuda"),
    (["infer", "bogus"], "infer", "invalid choice: 'bogus'"),
    (["info", "ops", "--backend", "bogus"], "info", "unknown device 'bogus'"),
    (["info", "everything"], "info", "invalid choice"),
    (["export-web", "--out", ""], "export-web", "an empty path"),
    (["export-web", "--out", "{tmp}/site", "--model", "nope"], "export-web",
     "unknown model 'nope'"),
    (["serve", "--port", "99999"], "serve", "[0, 65535]"),
    (["serve", "--port", "-1"], "serve", "--port"),
    (["serve", "--api-device", "cuda"], "serve", "unknown device 'cuda'"),
    (["serve", "--max-body", "0"], "serve", "--max-body"),
    (["serve", "--web", "{tmp}/none", "--pyodide", "{tmp}"], "serve", "give one of them"),
    (["import-onnx", "{tmp}/nope.onnx", "--out", "{tmp}/o"], "import-onnx", "nope.onnx"),
    (["import-onnx", "{tmp}/junk.bin", "--input-shape", "x"], "import-onnx",
     "--input-shape takes NAME=D1,D2"),
    (["train", "charlm", "--config", "x"], "train charlm",
     "unrecognized arguments: --config x; see pyrite train charlm --help"),
    (["bogus"], "", "invalid choice: 'bogus'"),
    ([], "", "required"),
]


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "junk.bin").write_bytes(b"garbage, not a record\n")
    for name, change in [("batch", {"batch_size": "abc"}), ("lr", {"learning_rate": -1}),
                         ("epochs", {"num_epochs": True})]:
        (tmp_path / f"{name}.json").write_text(json.dumps({**MNIST_CONFIG, **change}))
    return tmp_path


@pytest.mark.parametrize("argv,command,words", CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_a_mistake_is_one_line_and_status_2(argv: list[str], command: str, words: str,
                                            folder: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYRITE_DEBUG", raising=False)
    argv = [a.replace("{tmp}", str(folder)) for a in argv]
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # argparse's refusals exit while parsing
        status = exc.code  # type: ignore[assignment]
    out, err = capsys.readouterr()
    assert status == 2, (out, err)
    assert "Traceback" not in err and "Traceback" not in out
    assert err.count("\n") == 1, err
    assert err.startswith(f"pyrite {command}: error: ".replace("pyrite :", "pyrite:")), err
    assert words in err, err


def test_debug_adds_the_traceback(folder: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["infer", "mnist", "--record", str(folder / "junk.bin")]
    monkeypatch.delenv("PYRITE_DEBUG", raising=False)
    assert cli.main([*argv, "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback" in err and err.splitlines()[-1].startswith("pyrite infer mnist: error:")
    monkeypatch.setenv("PYRITE_DEBUG", "1")
    assert cli.main(argv) == 2
    assert "Traceback" in capsys.readouterr().err


def test_an_unexpected_error_is_one_line_asking_for_a_report(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    from pyrite import info

    def broken(names: list[str] | None = None, *, verbose: bool = False) -> str:
        raise TypeError("something pyrite did not expect")
    monkeypatch.setattr(info, "report_ops", broken)
    monkeypatch.delenv("PYRITE_DEBUG", raising=False)
    assert cli.main(["info", "ops"]) == 1
    err = capsys.readouterr().err
    assert err == ("pyrite info: error: unexpected TypeError: something pyrite did not expect; "
                   "this is a pyrite bug: run again with --debug and report the traceback\n")


@pytest.mark.parametrize("code,words", [(errno.ENOENT, "no such file"),
                                        (errno.EACCES, "permission denied"),
                                        (errno.EADDRINUSE, "--port 0 picks a free one"),
                                        (errno.ENOSPC, "no space left")])
def test_os_errors_a_user_causes_say_what_to_do(code: int, words: str) -> None:
    message, status = describe(OSError(code, "os words", "/some/path"))
    assert status == 2 and message.startswith("/some/path: ") and words in message


def test_every_option_says_what_it_means_and_its_default() -> None:
    missing = []

    def walk(parser: argparse.ArgumentParser) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)
            elif action.option_strings and not isinstance(action, argparse._HelpAction):
                text = action.help or ""
                has_default = action.default not in (None, False, argparse.SUPPRESS, [])
                if not text or (has_default and "default" not in text):
                    missing.append(f"{parser.prog} {action.option_strings[0]}")
    walk(cli.build_parser())
    assert missing == []


def test_device_help_lists_the_devices_here(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["infer", "mnist", "--help"])
    out = " ".join(capsys.readouterr().out.split()).replace("- ", "-")  # argparse's wrapping
    assert f"{', '.join(device_names())}, or decorated as autodiff<NAME> (default numpy)" in out


def test_ranges_check_values_and_describe_themselves() -> None:
    assert Range(1, integer=True).problem(True) == "must be an integer >= 1, got True"
    assert Range(1, integer=True).problem(2.0) == "must be an integer >= 1, got 2.0"
    assert LEARNING_RATE.problem(1) is None and LEARNING_RATE.problem(0) is not None
    assert Range(0, 10, hi_open=True).describe() == "a number in [0, 10)"
    assert device_problem("autodiff<numpy>") is None


def test_configs_check_their_run_fields() -> None:
    from pyrite.demos.mnist.training import TrainingConfig

    config = TrainingConfig.from_dict(MNIST_CONFIG)
    with pytest.raises(ConfigError, match=r"TrainingConfig.batch_size must be an integer >= 1"):
        config.with_batch_size(0)
    with pytest.raises(ConfigError, match=r"learning_rate must be a number in \(0, 1\]"):
        config.replace(learning_rate=float("nan"))
    check_fields(object())  # no such fields: nothing to check
