"""Coinciding lines stay visible: each line is thinner than the one drawn before it, with its own dash and an open
marker ringing the markers under it (ASR@2 = ASR@5, two runs that leak alike)."""

from engine.plots.layers import layer_style


def test_each_later_line_is_thinner_with_its_own_dash_and_an_open_marker():
    styles = [layer_style(i, 3) for i in range(3)]
    widths = [s["line"]["width"] for s in styles]
    sizes = [s["marker"]["size"] for s in styles]
    assert widths == sorted(widths, reverse=True) and len(set(widths)) == 3 and widths[-1] >= 1.5
    assert sizes == sorted(sizes, reverse=True) and len(set(sizes)) == 3
    assert len({s["line"]["dash"] for s in styles}) == 3
    assert all(s["marker"]["symbol"].endswith("-open") for s in styles)
    assert layer_style(0, 1)["line"]["width"] == 1.5, "a single line is drawn plainly"
