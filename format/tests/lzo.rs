//! The LZO1X decoder behind PyTables' `lzo` filter, against streams an independent LZO1X compressor
//! (`lzokay` on PyPI) writes at test time: random, text, long runs, zeros, matches up to 48 KiB back.

mod common;

const MAKE: &str = r#"
import lzokay, os, random, sys
random.seed(11)
d = sys.argv[1]
cases = {
    "one": b"a",
    "random": bytes(random.randrange(256) for _ in range(70000)),
    "text": b"".join(b"the quick brown fox %d jumps over the lazy dog " % i for i in range(3000)),
    "zeros": bytes(200000),
    "runs": b"".join(bytes([i % 256]) * random.randint(1, 600) for i in range(2000)),
}
base = bytes(random.randrange(256) for _ in range(20000))
cases["far"] = base + bytes(random.randrange(256) for _ in range(30000)) + base
for i in range(30):
    alphabet = random.randint(1, 8)
    cases["small%d" % i] = bytes(random.randrange(alphabet) for _ in range(random.randint(1, 5000)))
for k, v in cases.items():
    open(os.path.join(d, k + ".raw"), "wb").write(v)
    open(os.path.join(d, k + ".lzo"), "wb").write(lzokay.compress(v))
"#;

#[test]
fn lzo_streams_of_an_independent_compressor_decode_exactly() {
    if !common::have_python_module("lzokay") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    common::run_python(MAKE, &[dir.path()]);
    let mut checked = 0;
    for e in std::fs::read_dir(dir.path()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().and_then(|x| x.to_str()) != Some("lzo") {
            continue;
        }
        let stream = std::fs::read(&p).unwrap();
        let want = std::fs::read(p.with_extension("raw")).unwrap();
        let (got, used) = clawhdf5_format::lzo::decompress(&stream, want.len())
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        assert_eq!(used, stream.len(), "{}: input left over", p.display());
        assert!(got == want, "{}: decoded bytes differ", p.display());
        // One byte less room than the data needs is an error, not a truncated result.
        assert!(
            clawhdf5_format::lzo::decompress(&stream, want.len() - 1).is_err(),
            "{}",
            p.display()
        );
        checked += 1;
    }
    assert_eq!(checked, 36);
}
