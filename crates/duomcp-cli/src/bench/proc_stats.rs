//! A process's peak RSS and CPU time, from Linux's /proc.

/// Peak resident set size in KiB (`VmHWM`).
pub(crate) fn peak_rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// User + system CPU seconds (fields 14 and 15 of `/proc/PID/stat`, in clock ticks of 1/100 s,
/// the value of `CLK_TCK` on Linux).
pub(crate) fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces; fields start after the closing parenthesis.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_our_own_process() {
        let me = std::process::id();
        assert!(super::peak_rss_kib(me).is_some_and(|k| k > 0));
        assert!(super::cpu_seconds(me).is_some());
    }
}
