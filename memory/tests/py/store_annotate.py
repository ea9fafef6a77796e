"""One h5py turn of memory/tests/store_ping_pong.rs: check that the annotations of earlier turns are all still in
the store file, then change some (attributes on the store's stable objects and on the root, groups and datasets
of our own outside the store's groups, attributes of references to those and to the store's objects, second hard links to
the store's objects), now and then repack the whole file with h5repack.

    python3 store_annotate.py STATE.json STORE.h5 SEED

STATE.json records the annotations (created on the first turn), object references among them."""
import json
import os
import random
import shutil
import subprocess
import sys

import h5py
import numpy as np

# Plugin filters for some of the datasets, where hdf5plugin is installed: the store must carry them as they are.
try:
    import hdf5plugin

    PLUGIN = [dict(hdf5plugin.Blosc2(cname="zstd", filters=hdf5plugin.Blosc2.BITSHUFFLE)),
              dict(hdf5plugin.Blosc2(cname="lz4")), dict(hdf5plugin.Zstd())]
except ImportError:
    PLUGIN = []

STABLE = ["/", "/config", "/records", "/records/text", "/records/id", "/dictionaries", "/index/bm25"]


def uses_plugins(path):
    """Whether a dataset in the file uses a plugin filter (h5py names those by number)."""
    found = []
    with h5py.File(path, "r") as f:
        f.visititems(lambda _, o: found.append(1) if isinstance(o, h5py.Dataset)
                     and any(k.isdigit() for k in o._filters) else None)
    return bool(found)


def plain(v):
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def check(f, state):
    for obj, attrs in state["attrs"].items():
        for name, want in attrs.items():
            assert name in f[obj].attrs, f"attribute {name} of {obj} is gone"
            got = plain(f[obj].attrs[name])
            assert got == want, f"attribute {name} of {obj}: {got!r} != {want!r}"
    for p, want in state["datasets"].items():
        assert p in f, f"dataset {p} is gone"
        got = plain(f[p][()])
        assert got == want, f"dataset {p}: {got!r} != {want!r}"
    for g in state["groups"]:
        assert isinstance(f.get(g), h5py.Group), f"group {g} is gone"
    for obj, refs in state.get("refs", {}).items():
        for name, want in refs.items():
            assert name in f[obj].attrs, f"reference attribute {name} of {obj} is gone"
            value = f[obj].attrs[name]
            got = [value] if isinstance(value, h5py.Reference) else list(value)
            # By identity: an object with a second hard link has two names.
            same = len(got) == len(want) and all(f[r] == f[w] for r, w in zip(got, want))
            assert same, f"reference attribute {name} of {obj}: {[f[r].name for r in got]!r} != {want!r}"
    for p, target in state.get("hardlinks", {}).items():
        assert p in f and f[p] == f[target], f"hard link {p} no longer names {target}"

    def counts(name, obj):
        n = len(list(obj.attrs.keys()))
        assert len(obj.attrs) == n, f"/{name}: libhdf5 counts {len(obj.attrs)} attributes, lists {n}"
        if isinstance(obj, h5py.Group):
            assert len(obj) == len(list(obj.keys())), f"/{name}: link count"

    counts("", f)
    f.visititems(counts)


def main():
    state_path, path, seed = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(seed)
    state = {"attrs": {}, "datasets": {}, "groups": [], "refs": {}, "next": 0}
    if os.path.exists(state_path):
        with open(state_path) as fh:
            state = json.load(fh)
    state.setdefault("refs", {})
    with h5py.File(path, "a") as f:
        check(f, state)
        for _ in range(rng.randint(1, 8)):
            state["next"] += 1
            n = state["next"]
            op = rng.choice(["attr", "attr", "attr", "del_attr", "group", "dataset", "dataset", "grow", "del_dataset",
                             "ref_attr", "hard_link"])
            if op == "attr":
                obj = rng.choice(STABLE + state["groups"])
                kind = rng.randrange(3)
                value = [n, f"note {n} " + "x" * rng.randrange(40), [n * 0.5, n + 0.25]][kind]
                f[obj].attrs[f"user{n}"] = value
                state["attrs"].setdefault(obj, {})[f"user{n}"] = value
            elif op == "del_attr":
                owned = [(o, a) for o, attrs in state["attrs"].items() for a in attrs]
                if owned:
                    obj, name = rng.choice(sorted(owned))
                    del f[obj].attrs[name]
                    del state["attrs"][obj][name]
            elif op == "group":
                parent = rng.choice(["/user"] + state["groups"])
                g = f"{parent}/g{n}"
                f.create_group(g)
                if "/user" not in state["groups"]:
                    state["groups"].append("/user")
                state["groups"].append(g)
            elif op == "dataset":
                parent = rng.choice(["/user"] + state["groups"])
                p = f"{parent}/d{n}"
                data = list(range(n, n + rng.randint(1, 30)))
                if rng.random() < 0.5:
                    filters = rng.choice(PLUGIN) if PLUGIN and rng.random() < 0.4 else {"compression": "gzip"}
                    f.create_dataset(p, data=np.array(data, dtype="<i8"), chunks=(8,), maxshape=(None,),
                                     **filters)
                else:
                    f.create_dataset(p, data=np.array(data, dtype="<i8"))
                if "/user" not in state["groups"]:
                    state["groups"].append("/user")
                state["datasets"][p] = data
            elif op == "grow":
                growable = [p for p in sorted(state["datasets"]) if f[p].maxshape[0] is None]
                if growable:
                    p = rng.choice(growable)
                    extra = list(range(1000 + n, 1000 + n + rng.randint(1, 20)))
                    d = f[p]
                    d.resize((d.shape[0] + len(extra),))
                    d[-len(extra):] = extra
                    state["datasets"][p] += extra
            elif op == "del_dataset" and state["datasets"]:
                p = rng.choice(sorted(state["datasets"]))
                del f[p]
                del state["datasets"][p]
                # References to it would dangle: they go too.
                for obj, refs in state["refs"].items():
                    for name in [a for a, targets in refs.items() if p in targets]:
                        del f[obj].attrs[name]
                        del refs[name]
            elif op == "hard_link":
                # A second hard link to one of the store's objects, which its checkpoints move: the link must
                # follow (a whole-file rewrite may turn it into a soft link to the same path).
                target = rng.choice(STABLE[1:])
                p = f"/user/h{n}"
                f[p] = f[target]
                state.setdefault("hardlinks", {})[p] = target
                if "/user" not in state["groups"]:
                    state["groups"].append("/user")
            elif op == "ref_attr":
                # Object references to our own datasets and groups and to the store's stable objects (which its
                # checkpoints move or rewrite: the references must follow), as one reference or a list of them,
                # on the root, our groups or the store's objects.
                targets = sorted(state["datasets"]) + sorted(state["groups"]) + STABLE
                if targets:
                    obj = rng.choice(STABLE + state["groups"])
                    chosen = rng.sample(targets, rng.randint(1, min(3, len(targets))))
                    if len(chosen) == 1 and rng.random() < 0.5:
                        f[obj].attrs[f"ref{n}"] = f[chosen[0]].ref
                    else:
                        f[obj].attrs.create(f"ref{n}", [f[t].ref for t in chosen], dtype=h5py.ref_dtype)
                    state["refs"].setdefault(obj, {})[f"ref{n}"] = chosen
        check(f, state)
    # Debian's h5repack (HDF5 1.10) has no plugin filters: files that use them are not repacked.
    if shutil.which("h5repack") and rng.random() < 0.2 and not uses_plugins(path):
        tmp = path + ".repack"
        subprocess.run(["h5repack", path, tmp], check=True)
        os.replace(tmp, path)
        with h5py.File(path, "a") as f:
            # h5repack (HDF5 1.10) may copy an object that has two hard links twice: link ours again.
            for p, target in state.get("hardlinks", {}).items():
                if f[p] != f[target]:
                    del f[p]
                    f[p] = f[target]
            check(f, state)
    with open(state_path, "w") as fh:
        fh.write(json.dumps(state))
    print(json.dumps({"annotations": sum(len(a) for a in state["attrs"].values()) + len(state["datasets"])}))


if __name__ == "__main__":
    main()
