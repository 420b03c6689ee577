"""The dashboard's maps: pydeck layers and clicks, the road image, and the continuous-domain mechanisms' picked
points, heat maps and lattices (Explore through Streamlit's AppTest, as in ``test_app.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from app_helpers import APP, app, solve_button, texts
from streamlit.testing.v1 import AppTest

from mdpviz.ui.maps import clicked_secret, colours

# ---------------------------------------------------------------- map helpers


def test_clicked_secret_reads_pydeck_selection() -> None:
    assert clicked_secret(None) is None
    sel = {"indices": {"dist": [0]}, "objects": {"dist": [{"i": 17, "k": 4, "lat": 0, "lon": 0}]}}
    assert clicked_secret(sel) == ("dist", 17, 4)
    assert clicked_secret({"objects": {"secrets": [{"i": 3}]}}) == ("secrets", 3, None)


def test_colour_scale_ends() -> None:
    c = colours(np.array([0.0, 1.0]), 0.0, 1.0, "loss")
    assert c[0][:3] == [68, 1, 84] and c[1][:3] == [253, 231, 37]


def test_no_emoji_and_ascii_map_labels() -> None:
    """Icons are Material symbols (emoji render as empty boxes without an emoji font); deck.gl's text atlas is
    ASCII, so map labels are too."""
    import re

    root = Path(APP).parent
    emoji = re.compile("[\U0001F300-\U0001FAFF\u2600-\u27BF\u2B50\u23F0-\u23FF\uFE0F]")
    for path in [root / "app.py", *(root / "app_pages").glob("*.py"), *(root / "mdpviz" / "ui").glob("*.py")]:
        assert not emoji.search(path.read_text(encoding="utf-8")), path
    from mdpviz.ui.trajectories import trajectory_deck

    prob = __import__("mdpviz.problem", fromlist=["x"]).build_problem("west-oakland", 10, all_outputs=True)
    ex = {"polyline_lon": list(prob.x_lon[:3]), "polyline_lat": list(prob.x_lat[:3]), "trajectory": 0,
          "context": [{"lag": 1, "node": 1, "in_blanket": True, "lon": float(prob.x_lon[1]),
                       "lat": float(prob.x_lat[1])}], "lon": float(prob.x_lon[0]), "lat": float(prob.x_lat[0]),
          "next_lon": float(prob.x_lon[2]), "next_lat": float(prob.x_lat[2]), "task_lon": float(prob.x_lon[3]),
          "task_lat": float(prob.x_lat[3]), "station": 0, "next_station": 2, "task": 3}
    labels = [row["label"] for layer in trajectory_deck(prob, None, ex).layers if layer.type == "TextLayer"
              for row in layer.data]
    assert labels == ["t-1"] and all(label.isascii() for label in labels)


def test_road_image_draws_the_network() -> None:
    import base64
    import io

    from PIL import Image

    from mdpviz.ui import basemap

    img = basemap.road_image(np.array([24.0]), np.array([60.0]), np.array([24.01]), np.array([60.0]),
                             (23.99, 59.99, 24.02, 60.01), px_per_deg_lon=10_000)
    assert img.png[:8] == b"\x89PNG\r\n\x1a\n" and img.size[0] == 300
    width, height = img.size
    decoded = Image.open(io.BytesIO(img.png))
    assert decoded.mode == "LA" and decoded.size == (width, height)
    alpha = np.asarray(decoded)[:, :, 1]
    row = int(np.argmax(alpha.sum(axis=1)))
    assert abs(row - height / 2) <= 2  # the segment lies on the middle latitude
    assert (alpha[row, 110:190] > 0).all() and alpha[:, :90].max() == 0  # drawn from lon 24.00 to 24.01 only
    assert base64.b64encode(img.png)  # a data URL is possible without a server


def test_every_scatter_layer_of_a_map_reads_the_same_columns() -> None:
    """All points of a map go through one scatter pipeline: the same accessors, whatever is constant, so a browser
    without a GPU compiles one shader program for them (scripts/ui_timeline.py: the WebGL read-back wait of a cached
    Rome map went from 0.61 to 0.40 s)."""
    import json

    from mdpviz.problem import build_problem
    from mdpviz.ui import maps

    pb = build_problem("helsinki", 40, n_outputs=10)
    z = np.full(pb.m, 1.0 / pb.m)
    layers = maps.MapLayers(Z_row=z, secret=3, expected=(float(pb.x_lat[5]), float(pb.x_lon[5])),
                            secret_values=np.linspace(0, 1, pb.k), attack_y=2, heat_y=1,
                            extra_points=("anchor", pb.x_lat[:3], pb.x_lon[:3]),
                            lattice=(pb.x_lat[:4].reshape(2, 2), pb.x_lon[:4].reshape(2, 2)))
    deck = json.loads(maps.deck(pb, None, layers).to_json())
    scatter = [lay for lay in deck["layers"] if lay["@@type"] == "ScatterplotLayer"]
    assert {lay["id"] for lay in scatter} >= {"secrets", "dist", "outputs", "attack", "heat-y", "expected",
                                              "expected-line", "true", "extra", "lattice-anchors"}
    assert [lay["@@type"] for lay in deck["layers"]].count("LineLayer") == 1  # the lattice; the bias line is dots
    accessors = {lay["id"]: sorted(k for k in lay if k.startswith("get")) for lay in scatter}
    assert len({tuple(v) for v in accessors.values()}) == 1, accessors
    for lay in scatter:
        row = lay["data"][0]
        assert len(row["_fill"]) == 4 and len(row["_line"]) == 4 and row["_r"] > 0
        assert lay["getRadius"] == "@@=_r" and lay["radiusUnits"] == "pixels"


# ---------------------------------------------------------------- continuous-domain mechanisms (Result.rows)


AIPO_QUERY = {"mech": "aipo", "k": "40", "m": "12", "cells": "3", "budget_steps": "3", "lb_grid": "2"}


def html_text(at: AppTest) -> str:
    """The bodies of the page's HTML elements (the map's legends) as one string."""
    return " ".join(h.proto.body for h in at.get("html"))


def test_aipo_explore_picks_any_point_heat_map_lattice_and_budget_curve() -> None:
    from mdpviz.problem import build_problem
    from mdpviz.solve import solve

    at = app("app_pages/explore.py", query=AIPO_QUERY)
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    # diagnostics: the budget-search curve, and no PAnDA wording for a lattice
    assert "Budget search: utility loss against the east–west budget ε₁" in texts(at.markdown)
    assert "anchors on a" in texts(at.caption) and "PAnDA" not in texts(at.caption)
    assert "chosen ε₁ = " in texts(at.caption)
    # the dashed bound is named for what it is: the paper's universal bound, or the floor where that one is lower
    shown = solve(build_problem(at.session_state["city"], 40, n_outputs=12), "aipo",
                  {"eps": 5.0, "p": 2, "cells": 3, "budget_steps": 3, "lb_grid": 2}).diagnostics  # cached
    universal = shown["universal_lower_bound_m"]
    named = ("(universal lower bound)" if universal == shown["lower_bound_m"] else
             f"(the no-privacy floor, above the paper's universal lower bound of {universal:.1f} m)")
    assert named in texts(at.caption)
    # map: lattice toggle with its legend entry, heat map on by default for rows, output picker works
    assert at.checkbox(key="show_lattice").value and "anchor lattice (" in html_text(at)
    assert at.checkbox(key="show_heat").value
    at.selectbox(key="heat_y").set_value(3).run()
    assert not at.exception
    assert "z(y3 | x) = Pr[report y3 | true location x] (probability), interpolated over the plane" in html_text(at)
    at.checkbox(key="show_lattice").uncheck().run()
    assert "anchor lattice (" not in html_text(at)
    # an arbitrary point (not a node) gives the mechanism's own row there
    prob = build_problem(at.session_state["city"], 40, n_outputs=12)
    lat, lon = float(prob.x_lat.mean()) + 1e-4, float(prob.x_lon.mean()) - 2e-4
    at.session_state["point"] = f"{lat:.6f},{lon:.6f}"
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    result = solve(prob, "aipo", {"eps": 5.0, "p": 2, "cells": 3, "budget_steps": 3, "lb_grid": 2})  # cached
    row = result.rows(np.array([lat]), np.array([lon]))[0]
    caption = next(m.value for m in at.markdown if m.value.startswith("**Picked point**"))
    assert f"most likely report y{int(np.argmax(row))} with Pr = {row.max():.3g}" in caption
    assert at.query_params["pt"] == f"{lat:.6f},{lon:.6f}"
    assert "Pr[report y | true location picked point]" in html_text(at)
    # the continuous privacy check: pairs of arbitrary points, no additive tolerance
    at.number_input(key="ccheck_pairs").set_value(1000).run()
    at.button(key="ccheck_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    table = next(df.value for df in at.dataframe if "kind of pair" in df.value.columns)
    assert list(table["kind of pair"]) == ["uniform", "edge", "diagonal"] and set(table["violating pairs"]) == {"0"}
    assert "no violations" in texts(at.caption) and "no additive tolerance" in texts(at.caption)
    # back to the secret: the point is dropped from the state and the URL
    at.button(key="clear_point").click().run()
    assert at.session_state["point"] is None and "pt" not in at.query_params


def test_relaxed_variant_shows_its_fixed_split_and_fails_the_continuous_check() -> None:
    at = app("app_pages/explore.py", query={"mech": "aipo-r", "k": "40", "m": "12", "cells": "3"})
    solve_button(at).click().run()
    assert "One fixed split, no search: ε₁ = 5 km⁻¹" in texts(at.caption)
    at.number_input(key="ccheck_pairs").set_value(1000).run()
    at.button(key="ccheck_run").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "violating pairs**. Worst factor" in texts(at.caption)  # AIPO-R is not ε-mDP


def test_point_from_url_and_nearest_secret_heat_map_for_a_matrix_mechanism() -> None:
    at = app("app_pages/explore.py", query={**AIPO_QUERY, "pt": "north"})
    assert "`pt=north` is not a point" in texts(at.warning)
    # a mechanism with Z only: the heat map uses the nearest secret's row, and a picked point is not kept
    at = app("app_pages/explore.py", query={"mech": "em", "k": "40", "m": "12", "pt": "60.17,24.94"})
    solve_button(at).click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.session_state["point"] is None and not at.checkbox(key="show_heat").value
    at.checkbox(key="show_heat").check().run()
    assert not at.exception, [e.value for e in at.exception]
    assert "nearest secret (piecewise constant)" in html_text(at)
    assert not [c for c in at.checkbox if c.key == "show_lattice"]
    # the heat map follows the selected secret: another secret shows its own most likely report
    from mdpviz.problem import build_problem
    from mdpviz.solve import solve

    prob = build_problem(at.session_state["city"], 40, n_outputs=12)
    Z = solve(prob, "em", {"eps": 5.0}).Z
    for secret in (3, 17):
        at.number_input(key="secret").set_value(secret).run()
        assert at.session_state["heat_y"] == int(np.argmax(Z[secret]))


def test_the_heat_map_is_see_through_and_clipped_to_where_secrets_are() -> None:
    import base64
    import io

    from PIL import Image

    from mdpviz.ui.maps import PlaneGrid, heat_layer

    values = np.array([0.0, 0.001, 0.5, 1.0, 1.0, 0.8])
    inside = np.array([True, True, True, True, False, True])
    g = PlaneGrid(lat=np.repeat([60.0, 60.01], 3), lon=np.tile([24.0, 24.01, 24.02], 2), side_m=500.0,
                  nearest=np.zeros(6, dtype=np.int64), shape=(2, 3), values=values, vmax=1.0, inside=inside)
    url = heat_layer(g).image.strip("'").split(",", 1)[1]
    alpha = np.asarray(Image.open(io.BytesIO(base64.b64decode(url))))[::-1, :, 3].ravel()  # back to south first
    assert alpha[0] == alpha[1] == 0  # nothing and almost nothing: not drawn, the roads show through
    assert 0 < alpha[2] < alpha[3] <= 210  # the opacity grows with the value and never hides the map
    assert alpha[4] == 0 and alpha[5] > 0  # outside the sampled area: not drawn, even at the top value


def test_clicked_point_and_parse_point() -> None:
    from mdpviz.ui.continuous import parse_point
    from mdpviz.ui.maps import clicked_point

    assert clicked_point(None) is None and clicked_point({"objects": {"secrets": [{"i": 2}]}}) is None
    assert clicked_point({"objects": {"plane": [{"lat": 60.1, "lon": 24.9, "i": 7}]}}) == (60.1, 24.9, 7)
    assert parse_point("60.1,24.9") == (60.1, 24.9) and parse_point("1,2,3") is None and parse_point("") is None


def test_heat_map_image_is_a_valid_png_of_the_grid() -> None:
    import base64
    import io

    from PIL import Image

    from mdpviz.ui.maps import png_data_url

    rgba = np.arange(2 * 3 * 4, dtype=np.uint8).reshape(2, 3, 4)
    png = base64.b64decode(png_data_url(rgba).split(",", 1)[1])
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and int.from_bytes(png[16:20], "big") == 3  # width
    decoded = Image.open(io.BytesIO(png))
    assert decoded.mode == "RGBA" and np.array_equal(np.asarray(decoded), rgba)  # every pixel as given, losslessly
