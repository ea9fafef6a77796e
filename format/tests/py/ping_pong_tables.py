"""A PyTables (HDF5 1.14) turn of the ping-pong test (format/tests/ping_pong.rs): edit a file others made.

usage: ping_pong_tables.py FILE SEED TURN

Opens FILE in append mode with PyTables and makes a few random edits drawn from SEED: attributes set (some in
bursts) and deleted on any node, groups created, arrays, extendable arrays and tables created (compressed with
zlib, Blosc or bzip2 under shuffle), rows appended to the extendable arrays and tables it finds, nodes removed.
Prints one JSON object: {"ops": [...], "changed": [paths whose h5py view may differ], "removed": [paths that
may be gone, with everything under them]}.
"""
import json
import random
import sys
import warnings

import numpy as np
import tables

warnings.simplefilter("ignore")

FILTERS = [
    tables.Filters(complevel=5, complib="zlib", shuffle=True),
    tables.Filters(complevel=4, complib="blosc:lz4", shuffle=True),
    tables.Filters(complevel=3, complib="bzip2", shuffle=False),
    None,
]


class Row(tables.IsDescription):
    id = tables.UInt32Col()
    score = tables.Float64Col()
    tag = tables.StringCol(6)


def parent(path):
    head = path.rsplit("/", 1)[0]
    return head or "/"


def main():
    path, seed, turn = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    rng = random.Random(seed * 7919 + turn)
    # Opening a file in append mode marks its root as PyTables' (CLASS, TITLE and version attributes).
    ops, changed, removed = [], {"/"}, set()
    serial = [0]

    def fresh(prefix):
        serial[0] += 1
        return "t%d_%s%d" % (turn, prefix, serial[0])

    # Objects HDF5 2.0 wrote under libver "latest" may be beyond HDF5 1.14: then PyTables sits this turn out.
    try:
        with tables.open_file(path, "r") as f:
            for n in f.walk_nodes("/"):
                pass
    except tables.HDF5ExtError as e:
        sys.stdout.write(json.dumps({"ops": ["skipped: HDF5 %s cannot read it (%s)" % (tables.hdf5_version, str(e).splitlines()[-1])],
                   "changed": [], "removed": []}))
        return
    with tables.open_file(path, "a") as f:
        for _ in range(rng.randint(2, 7)):
            nodes = sorted(n._v_pathname for n in f.walk_nodes("/") if not isinstance(n, tables.link.Link))
            nodes = [n for n in nodes if not any(n == r or n.startswith(r + "/") for r in removed)]
            groups = [n for n in nodes if isinstance(f.get_node(n), tables.Group)]
            op = rng.choice(["attr", "attr", "burst", "del_attr", "group", "array", "earray", "table", "append",
                             "append", "remove"])
            if op in ("attr", "burst"):
                target = rng.choice(nodes)
                for _ in range(1 if op == "attr" else rng.randint(9, 20)):
                    value = rng.choice([np.int64(rng.randrange(10**6)), np.float32(rng.random()),
                                        np.arange(rng.randint(1, 5), dtype="<i2")])
                    f.set_node_attr(target, fresh("a"), value)
                ops.append("%s %s" % (op, target))
                changed.add(target)
            elif op == "del_attr":
                target = rng.choice(nodes)
                node = f.get_node(target)
                names = [n for n in node._v_attrs._v_attrnamesuser]
                if names:
                    name = rng.choice(names)
                    node._v_attrs.__delattr__(name)
                    ops.append("del_attr %s@%s" % (target, name))
                    changed.add(target)
            elif op == "group":
                g = rng.choice(groups)
                new = f.create_group(g, fresh("g"))
                for _ in range(rng.randint(0, 12)):
                    f.create_array(new, fresh("x"), np.arange(rng.randint(1, 4), dtype="<i4"))
                ops.append("group %s" % new._v_pathname)
                changed.update([g, new._v_pathname])
            elif op == "array":
                g = rng.choice(groups)
                a = f.create_array(g, fresh("a"), np.arange(rng.randint(1, 30), dtype=rng.choice(["<f8", ">i4", "u1"])))
                ops.append("array %s" % a._v_pathname)
                changed.update([g, a._v_pathname])
            elif op == "earray":
                g = rng.choice(groups)
                e = f.create_earray(g, fresh("e"), tables.Float32Atom(), (0, 3), filters=rng.choice(FILTERS))
                e.append(np.arange(3 * rng.randint(1, 20), dtype="<f4").reshape(-1, 3) * 0.5)
                ops.append("earray %s" % e._v_pathname)
                changed.update([g, e._v_pathname])
            elif op == "table":
                g = rng.choice(groups)
                t = f.create_table(g, fresh("t"), Row, filters=rng.choice(FILTERS))
                for i in range(rng.randint(1, 40)):
                    t.row["id"] = i
                    t.row["score"] = i * 0.25
                    t.row["tag"] = b"r%d" % i
                    t.row.append()
                t.flush()
                ops.append("table %s" % t._v_pathname)
                changed.update([g, t._v_pathname])
            elif op == "append":
                # Its own extendable arrays and tables (whoever appended to them since).
                # (h5py's turns may delete the attributes PyTables needs to see one: then it is not one.)
                growable = [n for n in nodes if n.rsplit("/", 1)[-1].startswith("t")
                            and isinstance(f.get_node(n), (tables.EArray, tables.Table))]
                if growable:
                    target = rng.choice(growable)
                    node = f.get_node(target)
                    k = rng.randint(1, 25)
                    if isinstance(node, tables.Table):
                        rows = np.zeros(k, dtype=node.dtype)
                        for name in node.dtype.names:
                            if node.dtype[name].kind in "iuf":
                                rows[name] = np.arange(k) + rng.randrange(1000)
                        node.append(rows)
                        node.flush()
                    else:
                        shape = (k,) + node.shape[1:]
                        node.append(np.ones(shape, dtype=node.dtype) * rng.randrange(100))
                    ops.append("append %d to %s" % (k, target))
                    changed.add(target)
            elif op == "remove":
                victims = [n for n in nodes if n != "/"]
                if victims:
                    target = rng.choice(victims)
                    f.remove_node(target, recursive=True)
                    ops.append("remove %s" % target)
                    removed.add(target)
                    changed.add(parent(target))
    sys.stdout.write(json.dumps({"ops": ops, "changed": sorted(changed), "removed": sorted(removed)}))


if __name__ == "__main__":
    main()
