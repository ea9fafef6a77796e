//! Timers, percentiles, thread CPU time and resident memory, read from `/proc` where Linux provides them.

use std::time::{Duration, Instant};

/// Seconds of `f` (wall clock) and its result.
pub fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let out = f();
    (out, t.elapsed().as_secs_f64())
}

/// CPU time consumed so far by the calling thread (`CLOCK_THREAD_CPUTIME_ID`).
pub fn thread_cpu() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let secs = u64::try_from(t.tv_sec).ok()?;
    let nanos = u32::try_from(t.tv_nsec).ok()?;
    Some(Duration::new(secs, nanos))
}

/// CPU time consumed so far by the whole process, every thread (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn process_cpu() -> Option<Duration> {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    let secs = u64::try_from(t.tv_sec).ok()?;
    let nanos = u32::try_from(t.tv_nsec).ok()?;
    Some(Duration::new(secs, nanos))
}

/// Resident set size of this process in bytes (`VmRSS` of `/proc/self/status`; None elsewhere).
pub fn rss_bytes() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The 1-, 5- and 15-minute load averages as printed by `uptime` (or "unknown").
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".into())
}

/// Latency summary of a set of samples (seconds in, reported in milliseconds and per second).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Latency {
    /// Samples.
    pub n: usize,
    /// Median (ms).
    pub p50_ms: f64,
    /// 99th percentile, nearest rank (ms).
    pub p99_ms: f64,
    /// Mean (ms).
    pub mean_ms: f64,
    /// Samples per second of wall time when run back to back.
    pub per_s: f64,
}

/// Nearest-rank percentile `p` (0..=100) of sorted `xs`.
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Summarise per-sample seconds; `total_s` is the wall time of the whole back-to-back run.
pub fn latency(samples: &[f64], total_s: f64) -> Latency {
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    Latency {
        n,
        p50_ms: percentile(&s, 50.0) * 1e3,
        p99_ms: percentile(&s, 99.0) * 1e3,
        mean_ms: if n == 0 {
            0.0
        } else {
            s.iter().sum::<f64>() / n as f64 * 1e3
        },
        per_s: if total_s > 0.0 {
            n as f64 / total_s
        } else {
            0.0
        },
    }
}

/// The median of `xs` (0 when empty).
pub fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    percentile(&s, 50.0)
}

/// A count with thousands separators: 100000 → "100,000".
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A size label: 1000 → "1K", 100000 → "100K", 1500 → "1,500".
pub fn size_label(n: usize) -> String {
    if n >= 1000 && n.is_multiple_of(1000) {
        format!("{}K", n / 1000)
    } else {
        thousands(n as u64)
    }
}

/// A figure with a sensible number of digits.
pub fn fig(x: f64) -> String {
    let a = x.abs();
    if a >= 1000.0 {
        thousands(x.round() as u64)
    } else if a >= 100.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        format!("{x:.3}")
    }
}

/// "met" or "not met".
pub fn met(ok: bool) -> String {
    if ok { "met" } else { "**not met**" }.to_string()
}

/// The folder a harness works in: `work_dir` (created if needed) or a temporary one, removed when the returned
/// guard is dropped.
pub fn work_dir(
    work_dir: &Option<std::path::PathBuf>,
) -> super::error::Result<(std::path::PathBuf, Option<tempfile::TempDir>)> {
    use super::error::io_at;
    match work_dir {
        Some(d) => {
            std::fs::create_dir_all(d).map_err(io_at(d))?;
            Ok((d.clone(), None))
        }
        None => {
            let tmp = tempfile::tempdir().map_err(io_at(&std::env::temp_dir()))?;
            Ok((tmp.path().to_path_buf(), Some(tmp)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let xs: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&xs, 50.0), 50.0);
        assert_eq!(percentile(&xs, 99.0), 99.0);
        assert_eq!(percentile(&[3.0], 99.0), 3.0);
        let l = latency(&[0.001, 0.003, 0.002], 0.006);
        assert!((l.p50_ms - 2.0).abs() < 1e-9);
        assert!((l.per_s - 500.0).abs() < 1e-9);
    }

    #[test]
    fn labels() {
        assert_eq!(thousands(100_000), "100,000");
        assert_eq!(thousands(999), "999");
        assert_eq!(size_label(10_000), "10K");
        assert_eq!(size_label(1500), "1,500");
        assert_eq!(fig(1234.4), "1,234");
        assert_eq!(fig(0.12345), "0.123");
    }

    #[test]
    fn proc_readings_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(rss_bytes().unwrap() > 0);
            assert!(thread_cpu().is_some());
        }
    }
}
