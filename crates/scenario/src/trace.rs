//! `trace` workloads: the flows of a CSV file. The file is read once when the scenario is
//! loaded (every line checked, the flows counted). A trace sorted by start time is then read
//! again as the run goes on, through the file handle opened at load, so that its flows are
//! not held: each is parsed as it starts. An unsorted trace is read a second time at load and
//! its flows held. A file changed between the two readings (its length or modification time)
//! stops the run with an error naming it.

use crate::deadline::Deadline;
use crate::limits::MAX_TIME;
use crate::paths::relative_to;
use crate::FlowSpec;
use fctlab_engine::Nanos;
use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::Arc;

/// How the lines of one trace file become flows.
#[derive(Debug)]
pub(crate) struct TracePlan {
    pub path: PathBuf,
    file: Arc<File>,
    /// The file's length and modification time when it was loaded.
    stamp: (u64, Option<std::time::SystemTime>),
    cols: Cols,
    hosts: HashMap<String, usize>,
    host_list: String,
    start: Nanos,
    deadline: Deadline,
    template: FlowSpec,
}

#[derive(Debug, Clone, Copy)]
struct Cols {
    start: usize,
    src: usize,
    dst: usize,
    size: usize,
    deadline: Option<usize>,
    tag: Option<usize>,
}

/// A line of the trace that is not a flow: (the column at fault, message).
type LineError = (&'static str, String);

/// What reading a trace at load gives: its plan, its flow count, and whether it is sorted by
/// start time.
pub(crate) struct Loaded {
    pub plan: TracePlan,
    pub count: u64,
    pub sorted: bool,
    /// The start of the first flow (in file order) past the time a run can span.
    pub past_max_time: Option<Nanos>,
}

/// The CSV reader of a trace (comments, trimmed fields, a header).
pub(crate) type Rows = csv::Reader<FileAt>;

/// Reads a shared file handle from its start with positional reads (so that several readers
/// of one trace do not share an offset), failing once the file is no longer as it was loaded.
pub(crate) struct FileAt {
    file: Arc<File>,
    pos: u64,
    stamp: (u64, Option<std::time::SystemTime>),
}

impl std::io::Read for FileAt {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if stamp_of(&self.file)? != self.stamp {
            return Err(std::io::Error::other("the file changed since the scenario was loaded"));
        }
        let n = self.file.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

fn stamp_of(f: &File) -> std::io::Result<(u64, Option<std::time::SystemTime>)> {
    let m = f.metadata()?;
    Ok((m.len(), m.modified().ok()))
}

fn csv_reader<R: std::io::Read>(r: R) -> csv::Reader<R> {
    csv::ReaderBuilder::new().comment(Some(b'#')).trim(csv::Trim::All).from_reader(r)
}

/// A csv error as `<path>: line N: what`.
pub(crate) fn csv_message(path: &std::path::Path, e: &csv::Error) -> String {
    let at = e.position().map(|p| format!("line {}: ", p.line())).unwrap_or_default();
    let what = match e.kind() {
        csv::ErrorKind::UnequalLengths { expected_len, len, .. } => {
            format!("expected {expected_len} fields, found {len}")
        }
        csv::ErrorKind::Utf8 { .. } => "not UTF-8 text".to_string(),
        _ => e.to_string(),
    };
    format!("{}: {at}{what}", path.display())
}

/// What a trace entry gives every flow besides its line.
pub(crate) struct Entry<'a> {
    pub scenario_file: &'a str,
    pub name: &'a str,
    pub topology: &'a fctlab_net::Topology,
    pub host_list: String,
    pub start: Nanos,
    pub deadline: Deadline,
    pub template: FlowSpec,
}

/// Reads trace `e.name` once: checks every line, counts the flows, and notes whether they are
/// sorted by start time.
pub(crate) fn load(e: Entry<'_>) -> Result<Loaded, String> {
    let path = relative_to(e.scenario_file, e.name);
    let cannot = |err: std::io::Error| format!("cannot read {}: {err}", path.display());
    let file = Arc::new(File::open(&path).map_err(cannot)?);
    let stamp = stamp_of(&file).map_err(cannot)?;
    if !file.metadata().map_err(cannot)?.is_file() {
        // a device or a pipe could give a header line without end
        return Err(format!("{}: not a regular file", path.display()));
    }
    let mut rows = csv_reader(FileAt { file: file.clone(), pos: 0, stamp });
    let cols: Vec<String> =
        rows.headers().map_err(|err| csv_message(&path, &err))?.iter().map(|c| c.to_string()).collect();
    if cols.iter().all(|c| c.is_empty()) {
        return Err(format!("{}: empty file", path.display()));
    }
    let col = |n: &str| cols.iter().position(|c| c == n);
    for n in ["start_s", "src", "dst", "size_bytes"] {
        if col(n).is_none() {
            return Err(format!("{}: the header must name the columns start_s, src, dst, size_bytes (and optionally deadline_s, tag); `{n}` is missing", path.display()));
        }
    }
    if let Some(c) =
        cols.iter().find(|c| !["start_s", "src", "dst", "size_bytes", "deadline_s", "tag"].contains(&c.as_str()))
    {
        return Err(format!(
            "{}: unknown column `{c}` (known: start_s, src, dst, size_bytes, deadline_s, tag)",
            path.display()
        ));
    }
    let cols = Cols {
        start: col("start_s").unwrap_or(0),
        src: col("src").unwrap_or(0),
        dst: col("dst").unwrap_or(0),
        size: col("size_bytes").unwrap_or(0),
        deadline: col("deadline_s"),
        tag: col("tag"),
    };
    let hosts = e
        .topology
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == fctlab_net::NodeKind::Host)
        .map(|(i, n)| (n.name.clone(), i))
        .collect();
    let plan = TracePlan {
        path,
        file,
        stamp,
        cols,
        hosts,
        host_list: e.host_list,
        start: e.start,
        deadline: e.deadline,
        template: e.template,
    };
    let (mut count, mut sorted, mut last, mut past_max_time) = (0u64, true, Nanos::ZERO, None);
    let mut record = csv::StringRecord::new();
    while rows.read_record(&mut record).map_err(|err| csv_message(&plan.path, &err))? {
        let f = plan.flow(&record).map_err(|(c, m)| plan.line_error(&record, c, m))?;
        sorted &= f.start >= last;
        if f.start > MAX_TIME && past_max_time.is_none() {
            past_max_time = Some(f.start);
        }
        last = f.start;
        count += 1;
    }
    Ok(Loaded { plan, count, sorted, past_max_time })
}

impl TracePlan {
    /// What every flow of the trace starts from (its protocol, ECN, default tag).
    pub fn template(&self) -> &FlowSpec {
        &self.template
    }

    /// A reader of the file from its start, failing if the file changed since it was loaded.
    pub fn rows(&self) -> Result<Rows, String> {
        let mut rows = csv_reader(FileAt { file: self.file.clone(), pos: 0, stamp: self.stamp });
        rows.headers().map_err(|e| self.changed(&e))?;
        Ok(rows)
    }

    /// The next flow of `rows`: None at the end; an error when the file changed since it was
    /// loaded (every line was checked then).
    pub fn next(&self, rows: &mut Rows, record: &mut csv::StringRecord) -> Result<Option<FlowSpec>, String> {
        if !rows.read_record(record).map_err(|e| self.changed(&e))? {
            return Ok(None);
        }
        self.flow(record).map(Some).map_err(|(c, m)| self.line_error(record, c, m))
    }

    fn changed(&self, e: &csv::Error) -> String {
        format!("{} (read again as the run went on)", csv_message(&self.path, e))
    }

    fn line_error(&self, record: &csv::StringRecord, column: &str, m: String) -> String {
        let row = record.position().map_or(0, |p| p.line());
        format!("{}: line {row}, column {column}: {m}", self.path.display())
    }

    /// The flow of one line.
    fn flow(&self, record: &csv::StringRecord) -> Result<FlowSpec, LineError> {
        let c = self.cols;
        let field = |i: usize| record.get(i).unwrap_or("");
        let start: f64 = field(c.start)
            .parse()
            .map_err(|_| ("start_s", format!("expected seconds as a number, got \"{}\"", field(c.start))))?;
        if !(start >= 0.0 && start.is_finite()) {
            return Err(("start_s", format!("must be a non-negative number of seconds, got {start}")));
        }
        let size: u64 = field(c.size).parse().map_err(|_| {
            ("size_bytes", format!("expected a positive whole number of bytes, got \"{}\"", field(c.size)))
        })?;
        if size == 0 {
            return Err(("size_bytes", "must be positive".into()));
        }
        let host = |col: &'static str, name: &str| {
            self.hosts
                .get(name)
                .copied()
                .ok_or_else(|| (col, format!("unknown host \"{name}\" (hosts: {})", self.host_list)))
        };
        let (src, dst) = (host("src", field(c.src))?, host("dst", field(c.dst))?);
        if src == dst {
            return Err(("dst", "a flow from a host to itself".into()));
        }
        let deadline = match c.deadline.map(field) {
            None | Some("") => self.deadline.for_size(Some(size)),
            Some(d) => {
                let v: f64 =
                    d.parse().map_err(|_| ("deadline_s", format!("expected seconds as a number, got \"{d}\"")))?;
                if !(v > 0.0 && v.is_finite()) {
                    return Err(("deadline_s", format!("must be positive, got {v}")));
                }
                Some(Nanos::from_secs_f64(v))
            }
        };
        let tag = c.tag.map(field).filter(|t| !t.is_empty());
        Ok(FlowSpec {
            src,
            dst,
            size_bytes: Some(size),
            start: self.start + Nanos::from_secs_f64(start),
            deadline,
            tag: tag.map_or_else(|| self.template.tag.clone(), std::sync::Arc::from),
            ..self.template.clone()
        })
    }
}
