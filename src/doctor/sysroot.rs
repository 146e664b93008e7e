//! The one way the doctor reads the machine: files under a root directory.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest file the doctor reads (`/proc/interrupts` of a big machine is well below).
const LIMIT: u64 = 8 << 20;

/// The root under which `/proc`, `/sys`, `/dev` and `/boot` are read: `/` on the machine
/// itself, a fake tree in tests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sysroot {
    root: PathBuf,
}

impl Default for Sysroot {
    fn default() -> Self {
        Sysroot { root: PathBuf::from("/") }
    }
}

/// The reason an I/O error gives, without Rust's `(os error N)` suffix.
fn why(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "does not exist".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e
            .raw_os_error()
            .map_or_else(|| e.to_string(), |c| std::io::Error::from_raw_os_error(c).to_string())
            .split(" (os error")
            .next()
            .unwrap_or_default()
            .to_lowercase(),
    }
}

impl Sysroot {
    /// Reads the machine under `root` (`/` for this machine).
    pub fn new(root: impl Into<PathBuf>) -> Sysroot {
        Sysroot { root: root.into() }
    }

    /// Whether this is the running machine's own root.
    pub fn is_host(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Where `path` (absolute on the examined machine) is on this one.
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    fn open(&self, path: &str) -> Result<std::fs::File, String> {
        let f = std::fs::File::open(self.path(path)).map_err(|e| why(&e))?;
        let meta = f.metadata().map_err(|e| why(&e))?;
        if meta.is_dir() {
            return Err("is a directory".into());
        }
        Ok(f)
    }

    /// The text of `path`, trimmed; an empty file is an error (`empty`), as the kernel's files
    /// always hold something when they mean something.
    pub fn read(&self, path: &str) -> Result<String, String> {
        let mut text = String::new();
        self.open(path)?.take(LIMIT).read_to_string(&mut text).map_err(|e| why(&e))?;
        let t = text.trim();
        if t.is_empty() {
            return Err("empty".into());
        }
        Ok(t.to_string())
    }

    /// Each line of `path`, gunzipped when `gzip` (`/proc/config.gz`), given to `line` as it is
    /// read: a long file is never held whole.
    pub fn each_line(&self, path: &str, gzip: bool, mut line: impl FnMut(&str)) -> Result<(), String> {
        use std::io::BufRead;
        let file = self.open(path)?;
        // At most LIMIT bytes of text either way: a gzip bomb ends there too.
        let mut reader: Box<dyn BufRead> = if gzip {
            Box::new(std::io::BufReader::new(flate2::read::GzDecoder::new(file).take(LIMIT)))
        } else {
            Box::new(std::io::BufReader::new(file.take(LIMIT)))
        };
        let mut text = String::new();
        loop {
            text.clear();
            match reader.read_line(&mut text) {
                Ok(0) => return Ok(()),
                Ok(_) => line(text.trim_end_matches('\n')),
                Err(e) if gzip => return Err(format!("not gzip text: {}", why(&e))),
                Err(e) => return Err(why(&e)),
            }
        }
    }

    /// Eight bytes at `offset` of `path` (an MSR through `/dev/cpu/N/msr`), native-endian.
    pub fn read_u64_at(&self, path: &str, offset: u64) -> Result<u64, String> {
        use std::os::unix::fs::FileExt;
        let mut buf = [0u8; 8];
        self.open(path)?.read_exact_at(&mut buf, offset).map_err(|e| why(&e))?;
        Ok(u64::from_ne_bytes(buf))
    }

    /// The 32-bit value a PM QoS device reads as (`/dev/cpu_dma_latency`: the latency limit in
    /// force, µs). Opening it for reading adds no constraint of its own.
    pub fn read_i32(&self, path: &str) -> Result<i32, String> {
        let mut buf = [0u8; 4];
        self.open(path)?.read_exact(&mut buf).map_err(|e| why(&e))?;
        Ok(i32::from_ne_bytes(buf))
    }

    /// The names in directory `path` (sorted), or why it cannot be listed.
    pub fn list(&self, path: &str) -> Result<Vec<String>, String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(path))
            .map_err(|e| why(&e))?
            .flatten()
            .take(100_000)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Whether `path` exists (a marker file such as `/.dockerenv`).
    pub fn exists(&self, path: &str) -> bool {
        self.path(path).symlink_metadata().is_ok()
    }
}
