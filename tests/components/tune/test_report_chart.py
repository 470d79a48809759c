"""The tuning report draws the objective per trial and against the settings that mattered,
inline, above its table of trials; before any trial has a value it draws nothing."""

import base64
import re
import types

from tfkfp.components.tune import report


def result(trials):
    return types.SimpleNamespace(
        objective="val_accuracy", direction="maximize", best_value=0.9, best_number=1,
        best_settings={"learning_rate": 0.01}, counts=lambda: {"complete": len(trials)},
        study_dir="/tmp/study", resumed=False, trials=trials)


def trial(number, value, rate, units):
    return {"number": number, "state": "complete", "value": value, "epochs": 2,
            "seconds": 1.0, "note": "", "settings": {"learning_rate": rate,
                                                       "hidden_units": units}}


def test_the_report_draws_the_objective_against_the_settings():
    trials = [trial(n, 0.5 + n / 20, 10 ** (-4 + n / 3), ["32", "64"][n % 2])
              for n in range(8)]
    text = report.markdown(result(trials))
    assert text.index("## val_accuracy against the settings") < text.index("## Trials")
    (encoded,) = re.findall(r"!\[[^]]*\]\(data:image/svg\+xml;base64,([^)]+)\)", text)
    svg = base64.b64decode(encoded).decode()
    words = set(re.findall(r"<text[^>]*>([^<]*)</text>", svg))
    assert {"objective per trial", "trial", "val_accuracy", "learning_rate"} <= words
    assert any(w.startswith("learning_rate (importance 1.00") for w in words)
    assert len(text) < 400_000  # inside what the UI's Markdown shows untruncated


def test_no_chart_before_any_trial_has_a_value():
    text = report.markdown(result([trial(0, None, 0.01, "32")]))
    assert "data:image" not in text and "## Trials" in text
