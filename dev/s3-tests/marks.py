"""pytest plugin: writes {test node id: [marker names]} of the collected tests to $MARKS_OUT
(families.py reads it to sort tests into families). Used by run.sh with `-p marks`."""
import json
import os


def pytest_collection_modifyitems(session, config, items):
    out = {item.nodeid: [m.name for m in item.iter_markers()] for item in items}
    with open(os.environ['MARKS_OUT'], 'w') as f:
        json.dump(out, f)
