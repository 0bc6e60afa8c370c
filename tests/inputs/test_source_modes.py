"""Every source mode has one strategy, picked from the spec's mode whichever way it is spelled."""

from zipper.inputs.modes import STRATEGIES, mode_of
from zipper.tablespec.modes import SourceMode
from zipper.tablespec.source import SourceSpec


class _Spec:
    def __init__(self, mode):
        self.source = SourceSpec.model_construct(mode=mode)


def test_every_mode_has_its_strategy():
    assert set(STRATEGIES) == set(SourceMode)
    assert all(strategy.mode is mode for mode, strategy in STRATEGIES.items())


def test_the_strategy_is_picked_from_the_mode_as_text_or_enum():
    assert mode_of(_Spec("cdc")) is mode_of(_Spec(SourceMode.CDC)) is STRATEGIES[SourceMode.CDC]
    assert SourceSpec(mode="landing_zone", path="/x").mode == "landing_zone"


def test_what_the_merge_asks_of_each_mode():
    closes = {mode for mode, strategy in STRATEGIES.items() if strategy.closes_keys}
    assert closes == {SourceMode.CDC, SourceMode.LANDING_ZONE, SourceMode.SNAPSHOT}
    assert [m for m, s in STRATEGIES.items() if s.located_when_due] == [SourceMode.LANDING_ZONE]
    assert [m for m, s in STRATEGIES.items() if s.complete_source] == [SourceMode.SNAPSHOT]
