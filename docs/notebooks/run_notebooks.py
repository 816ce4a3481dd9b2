#!/usr/bin/env python3
"""Runs the notebooks of docs/notebooks/ from scratch against the built module.

    PYTHONPATH=build/python python3 docs/notebooks/run_notebooks.py            # check them
    PYTHONPATH=build/python python3 docs/notebooks/run_notebooks.py --write    # and store the outputs

Each notebook runs in a fresh kernel (this Python's ipykernel) with its own folder as the
working directory; a cell that raises (every check in them is an assert) fails the run, naming
the notebook and the cell. Without --write, files the notebooks draw go to a temporary folder
(NCE_NOTEBOOK_OUT) and the stored notebooks are only read: the run also fails when a stored
notebook has a code cell that was not executed or shows an error, since the notebooks are kept
executed for readers.
With --write the executed notebooks, and what they draw, are written back into the folder.

An exercise notebook (cells with "exercise" metadata, answers/<notebook>.py holding the key)
runs three times: as stored, where every check must say "not written yet"; with the key's
answers in place of the "Your turn" cells, where every check must say right; and with the
key's wrong answers, where the checks must say wrong. Only the first is stored.

Exit 77 (meson's "skipped") with a message when nbformat, nbclient, ipykernel or the nce
module is missing.
"""
import argparse
import copy
import os
import re
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
NOTEBOOKS = ["infonce_gradient.ipynb", "infonce_exercise.ipynb", "train_retriever.ipynb"]
SKIP = 77


def skip(why):
    print(f"notebooks skipped: {why}")
    sys.exit(SKIP)


def require_tools():
    missing = []
    for module, package in [("nbformat", "python3-nbformat"), ("nbclient", "python3-nbclient"),
                            ("ipykernel", "python3-ipykernel")]:
        try:
            __import__(module)
        except ImportError:
            missing.append(package)
    if missing:
        skip("missing " + ", ".join(missing) + " (scripts/setup.sh installs them)")
    try:
        import nce  # noqa: F401  (the kernels inherit PYTHONPATH and import it the same way)
    except ImportError as error:
        skip(f"the nce module does not import ({error}); set PYTHONPATH to build/python")


def error_outputs(notebook):
    """(cell number, first line of the error) for every cell whose stored output is an error."""
    found = []
    for number, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                found.append((number, f"{output.get('ename')}: {output.get('evalue')}"))
    return found


def unexecuted_cells(notebook):
    return [number for number, cell in enumerate(notebook.cells)
            if cell.cell_type == "code" and cell.source.strip() and cell.get("execution_count") is None]


def answer_parts(name):
    """{("exercise" or "wrong", NAME): cell source} from answers/<notebook>.py; {} without one."""
    path = os.path.join(HERE, "answers", os.path.splitext(name)[0] + ".py")
    if not os.path.exists(path):
        return {}
    parts, key = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            marker = re.match(r"# (exercise|wrong): (\w+)\s*$", line)
            if marker:
                key = (marker.group(1), marker.group(2))
                parts[key] = ""
            elif key:
                parts[key] += line
    return {key: source.strip() + "\n" for key, source in parts.items()}


def with_answers(notebook, parts, kind):
    """A copy of `notebook` whose exercise cells hold the key's `kind` answers."""
    filled = copy.deepcopy(notebook)
    for cell in filled.cells:
        name = cell.metadata.get("exercise")
        if name:
            filled_source = parts.get((kind, name))
            if filled_source is None:
                raise SystemExit(f"answers: no '# {kind}: {name}' part for the notebook's exercise cell {name}")
            cell.source = filled_source
    return filled


def printed_text(notebook):
    return "".join(output.get("text", "") for cell in notebook.cells for output in cell.get("outputs", [])
                   if output.get("output_type") == "stream")


def execute(notebook, timeout):
    """Runs `notebook` in place in a fresh kernel; the problems found (empty: it ran)."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    # Python's own kernel (this interpreter), whatever the stored metadata names.
    client = NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=False,
                            record_timing=False, resources={"metadata": {"path": HERE}})
    try:
        client.execute()
    except CellExecutionError as error:
        text = re.sub(r"\x1b\[[0-9;]*m", "", str(error))  # IPython's colours
        return ["a cell raised:\n" + "\n".join(text.strip().splitlines()[-6:])]
    return []


def exercise_problems(notebook, parts, timeout):
    """The three runs of an exercise notebook (the stored one has run already)."""
    problems = []
    stored = printed_text(notebook)
    if "not written yet" not in stored or re.search(r"^(right|wrong):", stored, re.M):
        problems.append("as stored, the checks do not all say 'not written yet'")
    for kind, must, must_not in [("exercise", "right:", "wrong:"), ("wrong", "wrong:", "right: dL/dl")]:
        filled = with_answers(notebook, parts, kind)
        found = execute(filled, timeout)
        text = printed_text(filled)
        if not found and (must not in text or must_not in text or "not written yet" in text):
            found = [f"with the key's {kind} answers the checks printed:\n" +
                     "\n".join(line for line in text.splitlines() if re.match(r"(right|wrong|not written)", line))]
        problems += found
    return problems


def run(name, write, timeout):
    import nbformat

    path = os.path.join(HERE, name)
    notebook = nbformat.read(path, as_version=4)
    problems = []
    if not write:
        problems += [f"stored cell {number} has an error output ({line})" for number, line in error_outputs(notebook)]
        problems += [f"stored cell {number} was not executed: store the notebook executed "
                     f"(run_notebooks.py --write)" for number in unexecuted_cells(notebook)]
    started = time.monotonic()
    problems += execute(notebook, timeout)
    parts = answer_parts(name)
    if parts and not problems:
        problems += exercise_problems(notebook, parts, timeout)
    seconds = time.monotonic() - started
    if write and not problems:
        notebook.metadata["kernelspec"] = {"display_name": "Python 3 (ipykernel)", "language": "python",
                                           "name": "python3"}
        nbformat.write(notebook, path)
    print(f"{name}: {'FAIL' if problems else 'ok'} ({seconds:.1f} s{', written' if write and not problems else ''})")
    for problem in problems:
        print("  " + problem.replace("\n", "\n    "))
    return not problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=NOTEBOOKS, help="names in docs/notebooks/ (default: all)")
    parser.add_argument("--write", action="store_true", help="store the executed notebooks and their drawings")
    parser.add_argument("--timeout", type=int, default=300, help="seconds a cell may run")
    arguments = parser.parse_args()
    require_tools()
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")  # ipykernel's debugger warning
    with tempfile.TemporaryDirectory() as drawings:
        if arguments.write:
            os.environ.pop("NCE_NOTEBOOK_OUT", None)  # the notebooks' own folder
        else:
            os.environ["NCE_NOTEBOOK_OUT"] = drawings
        results = [run(name, arguments.write, arguments.timeout) for name in arguments.notebooks]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
