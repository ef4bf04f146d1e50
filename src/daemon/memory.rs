//! The process's memory: how the heap is set up and when what a pass freed is handed back to
//! the system, so an idle daemon (or dashboard) holds what it keeps, not what it once read.

/// Two malloc arenas at most: the event loop's, and one that the short-lived reading threads
/// share. glibc gives each new thread an arena of its own (up to eight per core), and an arena
/// keeps the pages of everything its threads ever held; with 1M settled files the readers'
/// arenas held 300 MB resident for 64 MB in use after a first meeting (measured with
/// `malloc_stats`), and capping them took the daemon from 515 to 380 MiB with start-up no
/// slower (docs/performance.md, "Memory at a million settlements"). Set before any thread
/// starts; `MALLOC_ARENA_MAX` in the environment still wins.
pub(super) fn limit_heap_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        // SAFETY: mallopt only sets a tunable of the allocator; no thread allocates yet.
        unsafe { libc::mallopt(libc::M_ARENA_MAX, 2) };
    }
}

/// Serves every allocation of a megabyte or more from a mapping of its own, unmapped when
/// freed. glibc otherwise raises that threshold to the size of the largest block freed (up to
/// 32 MB), so from its second build on the dashboard's largest table (the duplicate search's
/// hash per chronicle line, 9 MB at 769k lines) comes from a thread's arena, where its pages
/// stay resident at the arena's top after it is freed (`malloc_trim` does not shrink a
/// thread arena's top): `polisd serve` held 32 MiB after a few appends instead of 12
/// (docs/performance.md, "Dashboard memory"). `MALLOC_MMAP_THRESHOLD_` in the environment
/// still wins.
pub fn map_large_allocations() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none() {
        // SAFETY: mallopt only sets a tunable of the allocator.
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 1 << 20) };
    }
}

/// Hands the heap a pass freed back to the system: reading every file on several threads
/// leaves glibc arenas holding megabytes the daemon will not use again while it idles. The
/// machine code the pass ran (option parsing, the first full pass, every rule) is let go too
/// (see [`release_code_pages`]). Called after the initial scan, and by the event loop each
/// time it is about to wait with nothing queued after handling something (a pass, however
/// small: a restart's first passes read few files but run most of the code; or a batch of
/// polisd's own writes coming back, which runs the watcher's and the scope's code).
pub fn release_free_memory() {
    trim_heap_if_grown();
    #[cfg(target_os = "linux")]
    release_code_pages();
}

/// A pass that read at least this many files gives the heap they left back ([`trim_heap`]).
pub(super) const MANY_FILES: usize = 4096;

/// The process's anonymous resident bytes (the heap, mostly) after the heap was last trimmed.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
static RESIDENT_AT_TRIM: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// [`trim_heap`] when the process's anonymous resident memory grew since the heap was last
/// trimmed by a megabyte and by a sixteenth: the trim costs a `madvise` for every free chunk,
/// resident or not (~1 ms after every small pass), while a pass that frees little leaves
/// little to return. Read from `/proc/self/statm`, not glibc's `mallinfo2`, which walks every
/// free chunk too (45-70 ms with 1M settled, measured, on every idle).
fn trim_heap_if_grown() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let at_trim = RESIDENT_AT_TRIM.load(std::sync::atomic::Ordering::Relaxed);
        if anonymous_resident().is_some_and(|now| now > at_trim + trim_threshold(at_trim)) {
            trim_heap();
        }
    }
}

/// How much more resident memory, over `resident` bytes, makes a trim worth its cost.
fn trim_threshold(resident: usize) -> usize {
    (resident / 16).max(1 << 20)
}

/// Resident bytes not backed by a file (`statm`'s resident minus shared pages).
#[cfg(target_os = "linux")]
fn anonymous_resident() -> Option<usize> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let mut fields = statm.split_whitespace().skip(1);
    let resident: usize = fields.next()?.parse().ok()?;
    let shared: usize = fields.next()?.parse().ok()?;
    // SAFETY: sysconf only reads a constant of the system.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).ok()?;
    Some(resident.saturating_sub(shared) * page)
}

/// Returns the free pages of the heap to the system (a pass that read thousands of files
/// leaves them free but resident).
pub(super) fn trim_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim only returns free heap pages to the kernel; it touches no live
        // allocation.
        unsafe { libc::malloc_trim(0) };
        if let Some(now) = anonymous_resident() {
            RESIDENT_AT_TRIM.store(now, std::sync::atomic::Ordering::Relaxed);
        }
    }
}

/// Unmaps the resident pages of the process's machine code and read-only data (the
/// executable's and the shared libraries' `r-xp` and `r--p` mappings): after a pass they are
/// ~8 MB that an idle daemon does not touch, counted in its resident memory. The pages stay in
/// the page cache, so what the next pass runs is mapped back on first use at the cost of a
/// minor fault per 64 KB; the resident set then holds only what passes actually run. Only
/// read-only, file-backed mappings none of whose pages the process has written are released
/// (`Anonymous: 0 kB` in smaps: the relocated `RELRO` data is not, and writable or anonymous
/// mappings never are): their contents are the file's, so nothing is lost.
#[cfg(target_os = "linux")]
fn release_code_pages() {
    use std::sync::Mutex;
    // The clean mappings' lines as `/proc/self/maps` prints them, found once in smaps (which
    // walks every page of the process, ~1 ms): a read-only mapping cannot become dirty.
    // Each release reads the cheap `maps` and releases only a range still mapped as it was
    // then (a library unmapped since, and something else mapped there, is never touched).
    static CLEAN: Mutex<Option<std::collections::HashSet<String>>> = Mutex::new(None);
    let Ok(mut clean) = CLEAN.lock() else {
        return;
    };
    if clean.is_none() {
        let Ok(smaps) = std::fs::read_to_string("/proc/self/smaps") else {
            return;
        };
        *clean = Some(
            clean_file_mappings(&smaps)
                .into_iter()
                .map(|(line, _)| line)
                .collect(),
        );
    }
    let (Some(clean), Ok(maps)) = (clean.as_ref(), std::fs::read_to_string("/proc/self/maps"))
    else {
        return;
    };
    for line in maps.lines().filter(|l| clean.contains(l.trim_end())) {
        let Some((start, end)) = mapping_range(line) else {
            continue;
        };
        // SAFETY: the range is a private, read-only mapping of a file, as the kernel lists
        // it, with no page the process wrote (and, being read-only, none it can write).
        // MADV_DONTNEED drops the process's page-table entries; the next access maps the
        // file's unchanged bytes again (an executable being run cannot be written to:
        // ETXTBSY), so nothing changes under a running thread.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_DONTNEED);
        }
    }
}

/// The address range of a `maps` / `smaps` mapping line.
#[cfg(target_os = "linux")]
fn mapping_range(line: &str) -> Option<(usize, usize)> {
    let range = line.split_ascii_whitespace().next()?;
    let (start, end) = range.split_once('-')?;
    let (start, end) = (
        usize::from_str_radix(start, 16).ok()?,
        usize::from_str_radix(end, 16).ok()?,
    );
    (end > start).then_some((start, end))
}

/// The read-only (`r-xp`, `r--p`) mappings of a file that hold no anonymous (written,
/// copied-on-write) page, in `/proc/self/smaps`'s text: each one's first line (as
/// `/proc/self/maps` prints it, trailing blanks trimmed) and its address range.
#[cfg(target_os = "linux")]
fn clean_file_mappings(smaps: &str) -> Vec<(String, (usize, usize))> {
    let mut out = Vec::new();
    // The mapping being read, while it still qualifies.
    let mut current: Option<(&str, (usize, usize))> = None;
    // Whether its `Anonymous:` line was read (a mapping without one is left alone).
    let mut anonymous_seen = false;
    let mut finish = |current: &mut Option<(&str, (usize, usize))>, seen: bool| {
        if let Some((line, range)) = current.take().filter(|_| seen) {
            out.push((line.to_string(), range));
        }
    };
    for line in smaps.lines() {
        if let Some(kb) = line.strip_prefix("Anonymous:") {
            if kb.trim().trim_end_matches("kB").trim() != "0" {
                current = None;
            }
            anonymous_seen = true;
            continue;
        }
        // A mapping's first line starts with its hex range, not a `Key:` field.
        let Some(range) = mapping_range(line) else {
            continue;
        };
        finish(&mut current, anonymous_seen);
        anonymous_seen = false;
        let mut fields = line.split_ascii_whitespace();
        let perms = fields.nth(1).unwrap_or("");
        // The path, after offset, device and inode: only a mapping of a file.
        let path = fields.nth(3).unwrap_or("");
        if (perms == "r-xp" || perms == "r--p") && path.starts_with('/') {
            current = Some((line.trim_end(), range));
        }
    }
    finish(&mut current, anonymous_seen);
    out
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::{clean_file_mappings, trim_threshold};

    #[test]
    fn the_heap_is_trimmed_only_once_it_grew_by_a_sixteenth() {
        assert_eq!(trim_threshold(0), 1 << 20);
        assert_eq!(trim_threshold(10 << 20), 1 << 20);
        // 1M settled: the 8 MB each settlement frees and takes again is left alone.
        assert_eq!(trim_threshold(320 << 20), 20 << 20);
    }

    #[test]
    fn anonymous_resident_memory_grows_with_what_the_process_touches() {
        let before = super::anonymous_resident().expect("statm is readable");
        // Kept observable, so that no optimisation drops the allocation it measures.
        let touched = std::hint::black_box(vec![1u8; 64 << 20]);
        let after = super::anonymous_resident().unwrap();
        assert!(after >= before + (60 << 20), "{before} -> {after}");
        drop(touched);
    }

    const SMAPS: &str = "\
55d000000000-55d000100000 r--p 00000000 fe:01 123 /usr/bin/polisd
Size:               1024 kB
Rss:                 512 kB
Anonymous:             0 kB
55d000100000-55d000900000 r-xp 00100000 fe:01 123 /usr/bin/polisd
Rss:                4096 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me
55d000900000-55d000a00000 r--p 00900000 fe:01 123 /usr/bin/polisd
Rss:                 400 kB
Anonymous:           400 kB
55d000a00000-55d000a10000 rw-p 00a00000 fe:01 123 /usr/bin/polisd
Anonymous:            64 kB
55d001000000-55d002000000 rw-p 00000000 00:00 0 [heap]
Anonymous:          8000 kB
7f0000000000-7f0000001000 r--p 00000000 00:00 0
Anonymous:             0 kB
7f0000100000-7f0000200000 r-xp 00000000 fe:01 77 /usr/lib/x86_64-linux-gnu/libc.so.6
Rss:                 600 kB
7f0000300000-7f0000400000 r-xp 00000000 fe:01 77 /usr/lib/x86_64-linux-gnu/libm.so.6
Anonymous:             0 kB
";

    #[test]
    fn only_read_only_file_mappings_without_written_pages_are_released() {
        let found = clean_file_mappings(SMAPS);
        assert_eq!(
            found[0].0,
            "55d000000000-55d000100000 r--p 00000000 fe:01 123 /usr/bin/polisd"
        );
        assert_eq!(
            found
                .into_iter()
                .map(|(_, range)| range)
                .collect::<Vec<_>>(),
            vec![
                (0x55d000000000, 0x55d000100000),
                (0x55d000100000, 0x55d000900000),
                // The relocated read-only data (written by the loader), the writable data,
                // the heap, an anonymous mapping and a mapping whose `Anonymous:` line is
                // missing are kept.
                (0x7f0000300000, 0x7f0000400000),
            ]
        );
    }
}
