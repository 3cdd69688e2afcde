import pytest

from gpflow_svgpvae.experiments import cli


def test_cli_lists_experiments_and_rejects_unknown(capsys):
    assert cli.main(["--help"]) == 0
    assert "rotated_mnist table1" in capsys.readouterr().out
    assert cli.main(["nonsense"]) == 2
    assert "unknown experiment 'nonsense'" in capsys.readouterr().err


@pytest.mark.parametrize("name", cli.EXPERIMENTS)
def test_cli_forwards_to_each_experiment_parser(name, capsys):
    with pytest.raises(SystemExit) as exit_info:
        cli.main([name, "--help"])
    assert exit_info.value.code == 0
    assert f"gpflow_svgpvae.experiments.{name}" in capsys.readouterr().out  # that module's own usage
