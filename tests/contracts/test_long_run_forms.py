"""The forms that start a long background job (a comparison, an audit, a sweep, a membership experiment) start it
only from their button: Enter in a field must not submit them (Streamlit's default), which once started an
unwanted comparison of minutes in the browser."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LONG_RUN_FORMS = {
    "pages/defense_comparison.py": "cmp_setup",
    "pages/audit.py": "audit_setup",
    "pages/sweeps.py": "sweep_setup",
    "pages/membership.py": "mia_setup",
}


@pytest.mark.parametrize("page,key", sorted(LONG_RUN_FORMS.items()))
def test_a_long_run_form_is_not_submitted_by_enter(page, key):
    tree = ast.parse((ROOT / page).read_text(encoding="utf-8"))
    forms = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "form"
        and n.args
        and isinstance(n.args[0], ast.Constant)
        and n.args[0].value == key
    ]
    assert len(forms) == 1, f"{page}: st.form({key!r}) not found"
    kw = {k.arg: k.value for k in forms[0].keywords}
    assert isinstance(kw.get("enter_to_submit"), ast.Constant) and kw["enter_to_submit"].value is False, (
        f"{page}: st.form({key!r}) must pass enter_to_submit=False"
    )
