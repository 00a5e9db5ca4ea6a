from __future__ import annotations

from nvq.world.environment import capture, local_env, masked, remote_env

SHELL = {
    "PATH": "/home/me/proj/.venv/bin:/usr/local/bin:/usr/bin:/bin",
    "VIRTUAL_ENV": "/home/me/proj/.venv",
    "HOME": "/home/me",
    "USER": "me",
    "LANG": "C.UTF-8",
    "WANDB_API_KEY": "abc123",
    "HF_TOKEN": "hf_xyz",
    "DB_PASSWORD": "pw",
    "PWD": "/home/me/proj",
    "OLDPWD": "/home/me",
    "SHLVL": "2",
    "_": "/usr/bin/nvq",
    "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
    "SSH_CONNECTION": "1.2.3.4 5 6.7.8.9 22",
    "DISPLAY": ":0",
    "WAYLAND_DISPLAY": "wayland-0",
    "XDG_RUNTIME_DIR": "/run/user/1000",
    "TERM": "xterm-256color",
    "TERM_PROGRAM": "vscode",
    "NVQ_HOME": "/home/me/.nvq",
    "CUDA_VISIBLE_DEVICES": "1",
    "MY_SCRATCH": "/scratch/me",
    "SLACK_WEBHOOK": "https://hooks/x",
}


def test_capture_leaves_what_only_means_something_in_that_shell() -> None:
    assert capture(SHELL, exclude=["SLACK_*"]) == {
        "DB_PASSWORD": "pw",
        "HF_TOKEN": "hf_xyz",
        "HOME": "/home/me",
        "LANG": "C.UTF-8",
        "MY_SCRATCH": "/scratch/me",
        "PATH": "/home/me/proj/.venv/bin:/usr/local/bin:/usr/bin:/bin",
        "USER": "me",
        "VIRTUAL_ENV": "/home/me/proj/.venv",
        "WANDB_API_KEY": "abc123",
    }


def test_secret_looking_values_are_masked_for_display() -> None:
    shown = masked(capture(SHELL))
    assert shown["WANDB_API_KEY"] == shown["HF_TOKEN"] == shown["DB_PASSWORD"] == "***"
    assert shown["LANG"] == "C.UTF-8"


def test_the_local_node_gets_the_capture_as_it_was_with_nvq_last() -> None:
    env = local_env(
        capture(SHELL),
        cli={"LANG": "en_GB.UTF-8", "CUDA_VISIBLE_DEVICES": "7"},
        nvq={"CUDA_VISIBLE_DEVICES": "0", "NVQ_JOB_ID": "5"},
    )
    assert env["VIRTUAL_ENV"] == "/home/me/proj/.venv"
    assert env["PATH"] == SHELL["PATH"]
    assert env["LANG"] == "en_GB.UTF-8"
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["NVQ_JOB_ID"] == "5"


NODE_PATHS = {"/usr/local/bin", "/usr/bin", "/bin", "/opt/cuda/bin", "/home/me", "/scratch/me"}
LOGIN = {"PATH": "/usr/bin:/bin:/opt/cuda/bin", "HOME": "/home/gpu", "USER": "gpu", "LANG": "C"}


def test_a_remote_node_drops_the_submitters_paths_it_lacks_and_says_why() -> None:
    result = remote_env(
        capture(SHELL),
        login=LOGIN,
        path_exists=NODE_PATHS.__contains__,
        node={"HF_HOME": "/data/hf"},
        cli={"MY_SCRATCH": "/tmp"},
        nvq={"CUDA_VISIBLE_DEVICES": "2", "NVQ_JOB_ID": "9"},
    )
    env = result.env
    assert "VIRTUAL_ENV" not in env
    # the submitter's entries the node has, then the node's own
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin:/opt/cuda/bin"
    assert env["LANG"] == "C.UTF-8"  # the capture wins over the login
    assert (env["HOME"], env["USER"]) == ("/home/gpu", "gpu")
    assert env["HF_HOME"] == "/data/hf" and env["MY_SCRATCH"] == "/tmp"
    assert env["CUDA_VISIBLE_DEVICES"] == "2" and env["NVQ_JOB_ID"] == "9"
    assert sorted(str(d) for d in result.dropped) == [
        "HOME=/home/me (the node's own)",
        "PATH entry /home/me/proj/.venv/bin (no such path there)",
        "USER=me (the node's own)",
        "VIRTUAL_ENV=/home/me/proj/.venv (no such path there)",
    ]


def test_a_path_list_the_node_has_none_of_is_dropped_whole() -> None:
    result = remote_env(
        {"LD_LIBRARY_PATH": "/home/me/lib:/home/me/lib64", "URL": "https://x/y"},
        login={},
        path_exists=lambda path: False,
    )
    assert result.env == {"URL": "https://x/y"}
    assert [str(d) for d in result.dropped] == [
        "LD_LIBRARY_PATH=/home/me/lib:/home/me/lib64 (no such path there)"
    ]


def test_nvq_variables_win_even_over_env_flags() -> None:
    result = remote_env(
        {}, login={}, path_exists=lambda p: True,
        cli={"NVQ_JOB_ID": "spoof"}, nvq={"NVQ_JOB_ID": "3"},
    )
    assert result.env == {"NVQ_JOB_ID": "3"}
