//! The built-in workspace server: file tools confined to one folder, every side effect logged to a ledger.
//!
//! `faultlab eval` runs agents against it (behind the fault proxy) and grades what they did from the folder and
//! the ledger. Every path is relative to the workspace root. A path that is absolute, climbs out with `..`, or
//! resolves through a symlink to somewhere outside the root is refused before anything touches the disk.
//! Failures are tool results with `isError: true`, so the model can read them; JSON-RPC errors are left to
//! protocol problems.

use rmcp::handler::server::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Component, Path, PathBuf};
use std::sync::{Mutex, PoisonError};

/// The name the workspace server reports in `serverInfo`.
pub const SERVER_NAME: &str = "faultlab-workspace";
/// Largest file `read_file` returns (1 MiB): more would not help a model, and the reply must stay one sane line.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;

/// Why the server cannot start. The reason is part of the message, not a `source`, so `{:#}` does not repeat it.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot use workspace root {}: {reason}", path.display())]
    Root { path: PathBuf, reason: io::Error },
    #[error("cannot open ledger {}: {reason}", path.display())]
    Ledger { path: PathBuf, reason: io::Error },
}

/// The kinds of side effect, as the ledger names them (`faultlab_eval::evidence::Op`).
#[derive(Debug, Clone, Copy, Serialize)]
#[serde(rename_all = "snake_case")]
enum Op {
    Write,
    Append,
    Delete,
    Move,
    MakeDir,
}

impl Op {
    /// Each op has exactly one tool.
    fn tool(self) -> &'static str {
        match self {
            Op::Write => "write_file",
            Op::Append => "append_file",
            Op::Delete => "delete_file",
            Op::Move => "move_file",
            Op::MakeDir => "make_dir",
        }
    }
}

/// One ledger line; must match `faultlab_eval::evidence::LedgerEntry`, which denies unknown fields.
#[derive(Serialize)]
struct Entry {
    seq: u64,
    tool: &'static str,
    op: Op,
    path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    to: Option<String>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    sha256: Option<String>,
}

/// The ledger file and its sequence. Held locked across each side effect, so the line order is the order the
/// effects happened in.
struct Ledger {
    file: Option<File>,
    seq: u64,
    /// Set once a line could not be written: later side effects are refused rather than left unrecorded.
    broken: Option<String>,
}

impl Ledger {
    fn record(&mut self, mut entry: Entry) {
        let Some(file) = &mut self.file else { return };
        self.seq += 1;
        entry.seq = self.seq;
        // One unbuffered write per line: once it returns the kernel has it, so a crash later loses nothing.
        let written = serde_json::to_vec(&entry).map_err(io::Error::from).and_then(|mut line| {
            line.push(b'\n');
            file.write_all(&line)
        });
        if let Err(e) = written {
            tracing::error!("the side-effect ledger cannot be written: {e}");
            self.broken = Some(e.to_string());
        }
    }
}

/// A checked path: where it is on disk, and how the ledger names it (relative, `/`-separated).
struct Target {
    abs: PathBuf,
    rel: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct PathArgs {
    /// A path relative to the workspace root, e.g. `notes/todo.txt`.
    pub path: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ListArgs {
    /// A folder relative to the workspace root; omit it (or give `.`) for the root itself.
    // Advertised as a plain optional string (no `null` type, no `default: null`), which models handle best; an
    // explicit `null` is still accepted.
    #[serde(default)]
    #[schemars(with = "String", default = "root_folder")]
    pub path: Option<String>,
}

fn root_folder() -> &'static str {
    "."
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct WriteArgs {
    /// A file path relative to the workspace root; missing parent folders are created.
    pub path: String,
    /// The text to write.
    pub content: String,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct MoveArgs {
    /// The file or folder to move, relative to the workspace root.
    pub from: String,
    /// The new path, relative to the workspace root; it must not exist yet.
    pub to: String,
}

/// The workspace MCP server; one per process (one stdio connection).
pub struct WorkspaceServer {
    /// Canonical: every resolved path is compared against it.
    root: PathBuf,
    ledger: Mutex<Ledger>,
    router: ToolRouter<Self>,
}

impl WorkspaceServer {
    /// A server confined to `root` (which must be a readable folder), appending side effects to `ledger` if given.
    pub fn open(root: &Path, ledger: Option<&Path>) -> Result<Self, OpenError> {
        let bad_root = |reason| OpenError::Root { path: root.to_owned(), reason };
        fs::read_dir(root).map_err(bad_root)?;
        let canonical = root.canonicalize().map_err(bad_root)?;
        let (file, seq) = match ledger {
            None => (None, 0),
            Some(path) => {
                let bad_ledger = |reason| OpenError::Ledger { path: path.to_owned(), reason };
                // Inside the workspace the agent could rewrite its own evidence. Checked before the file is created.
                let folder = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
                if folder.canonicalize().is_ok_and(|p| p.starts_with(&canonical)) {
                    return Err(bad_ledger(io::Error::other("it is inside the workspace")));
                }
                let file = OpenOptions::new().create(true).append(true).open(path).map_err(bad_ledger)?;
                // A server restarted on the same ledger continues its numbering: seq stays unique per file.
                let lines = fs::read(path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count() as u64);
                (Some(file), lines)
            }
        };
        let ledger = Mutex::new(Ledger { file, seq, broken: None });
        Ok(Self { root: canonical, ledger, router: Self::tool_router() })
    }

    /// Checks a path the agent gave. `..` is applied lexically and must not climb above the root; then the
    /// deepest part that exists (a symlink counts, even a dangling one) must resolve inside the root, since a
    /// symlink anywhere on the way may lead out. The rest does not exist yet, so it cannot be a symlink. The
    /// caller works on the normalised path, never the raw one, so the kernel resolves what was checked.
    fn resolve(&self, raw: &str) -> Result<Target, String> {
        let escapes = || format!("path escapes the workspace: {raw}");
        let mut parts = Vec::new();
        for part in Path::new(raw).components() {
            match part {
                Component::Normal(name) => parts.push(name),
                Component::CurDir => {}
                Component::ParentDir => {
                    parts.pop().ok_or_else(escapes)?;
                }
                Component::RootDir | Component::Prefix(_) => return Err(escapes()),
            }
        }
        let mut abs = self.root.clone();
        abs.extend(&parts);
        let mut existing = abs.as_path();
        while fs::symlink_metadata(existing).is_err() {
            existing = existing.parent().ok_or_else(escapes)?;
        }
        match existing.canonicalize() {
            Ok(real) if real.starts_with(&self.root) => {}
            // Outside, or unresolvable (a dangling or looping symlink): refuse rather than guess where it leads.
            _ => return Err(escapes()),
        }
        let rel = parts.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>().join("/");
        Ok(Target { abs, rel: if rel.is_empty() { ".".into() } else { rel } })
    }

    /// Performs one side effect and records it, refused or not. On success the ledger names the normalised
    /// paths; on failure the paths as the agent gave them.
    fn mutate(
        &self,
        op: Op,
        path: &str,
        to: Option<&str>,
        effect: impl FnOnce(&Target, Option<&Target>) -> Result<String, String>,
    ) -> CallToolResult {
        let mut ledger = self.ledger.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(broken) = &ledger.broken {
            return tool_error(format!("refused: the side-effect ledger cannot be written ({broken})"));
        }
        let outcome = self.resolve(path).and_then(|from| {
            let dest = to.map(|to| self.resolve(to)).transpose()?;
            let text = effect(&from, dest.as_ref())?;
            Ok((from, dest, text))
        });
        let (path, to) = (path.to_owned(), to.map(str::to_owned));
        let mut entry = Entry { seq: 0, tool: op.tool(), op, path, to, ok: false, error: None, sha256: None };
        let result = match outcome {
            Ok((from, dest, text)) => {
                (entry.ok, entry.path, entry.to) = (true, from.rel, dest.map(|d| d.rel));
                if matches!(op, Op::Write | Op::Append) {
                    entry.sha256 = fs::read(&from.abs).ok().map(|bytes| sha256_hex(&bytes));
                }
                text_result(text)
            }
            Err(e) => {
                entry.error = Some(e.clone());
                tool_error(e)
            }
        };
        ledger.record(entry);
        result
    }
}

#[tool_router]
impl WorkspaceServer {
    #[tool(
        description = "Read a UTF-8 text file of the workspace (at most 1 MiB) and return its content.",
        annotations(read_only_hint = true)
    )]
    fn read_file(&self, Parameters(args): Parameters<PathArgs>) -> CallToolResult {
        let read = self.resolve(&args.path).and_then(|t| {
            let size = regular_file(&t, &args.path)?.len();
            if size > MAX_READ_BYTES {
                return Err(format!("cannot read {}: it has {size} bytes, more than {MAX_READ_BYTES}", args.path));
            }
            let bytes = fs::read(&t.abs).map_err(|e| failed("read", &args.path, e))?;
            String::from_utf8(bytes).map_err(|_| {
                format!("cannot read {}: it is not UTF-8 text (file_info gives its size and hash)", args.path)
            })
        });
        read.map_or_else(tool_error, text_result)
    }

    #[tool(
        description = "List a folder of the workspace (default: the root): one entry per line, sorted, folders with \
                       a trailing `/`.",
        annotations(read_only_hint = true)
    )]
    fn list_dir(&self, Parameters(args): Parameters<ListArgs>) -> CallToolResult {
        let raw = args.path.as_deref().unwrap_or(".");
        let listed = self.resolve(raw).and_then(|t| {
            let mut names = Vec::new();
            for entry in fs::read_dir(&t.abs).map_err(|e| failed("list", raw, e))? {
                let entry = entry.map_err(|e| failed("list", raw, e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                // file_type does not follow symlinks: a link is listed as a name, whatever it points to.
                let dir = entry.file_type().is_ok_and(|k| k.is_dir());
                names.push(if dir { name + "/" } else { name });
            }
            names.sort();
            Ok(names.join("\n"))
        });
        listed.map_or_else(tool_error, text_result)
    }

    #[tool(
        description = "Size and SHA-256 of a workspace file, as JSON {\"path\",\"bytes\",\"sha256\"}. Read-only: use \
                       it to check whether an earlier write took effect.",
        annotations(read_only_hint = true)
    )]
    fn file_info(&self, Parameters(args): Parameters<PathArgs>) -> CallToolResult {
        let info = self.resolve(&args.path).and_then(|t| {
            regular_file(&t, &args.path)?;
            let bytes = fs::read(&t.abs).map_err(|e| failed("read", &args.path, e))?;
            let info = serde_json::json!({"path": t.rel, "bytes": bytes.len(), "sha256": sha256_hex(&bytes)});
            Ok(info.to_string())
        });
        info.map_or_else(tool_error, text_result)
    }

    #[tool(
        description = "Write text to a workspace file, replacing it if it exists; missing parent folders are created.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true)
    )]
    fn write_file(&self, Parameters(args): Parameters<WriteArgs>) -> CallToolResult {
        self.mutate(Op::Write, &args.path, None, |t, _| {
            make_parent(&t.abs)
                .and_then(|()| fs::write(&t.abs, &args.content))
                .map_err(|e| failed("write", &args.path, e))?;
            Ok(format!("wrote {} bytes to {}", args.content.len(), t.rel))
        })
    }

    #[tool(
        description = "Append text to the end of a workspace file, creating it (and missing parent folders) if needed.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false)
    )]
    fn append_file(&self, Parameters(args): Parameters<WriteArgs>) -> CallToolResult {
        self.mutate(Op::Append, &args.path, None, |t, _| {
            make_parent(&t.abs)
                .and_then(|()| OpenOptions::new().create(true).append(true).open(&t.abs))
                .and_then(|mut file| file.write_all(args.content.as_bytes()))
                .map_err(|e| failed("append to", &args.path, e))?;
            Ok(format!("appended {} bytes to {}", args.content.len(), t.rel))
        })
    }

    #[tool(
        description = "Move or rename a workspace file or folder. Fails if the destination already exists; missing \
                       parent folders of the destination are created.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false)
    )]
    fn move_file(&self, Parameters(args): Parameters<MoveArgs>) -> CallToolResult {
        self.mutate(Op::Move, &args.from, Some(&args.to), |from, to| {
            let to = to.ok_or_else(|| "move_file needs a destination".to_owned())?;
            fs::symlink_metadata(&from.abs).map_err(|e| failed("move", &args.from, e))?;
            if fs::symlink_metadata(&to.abs).is_ok() {
                return Err(format!("cannot move {} to {}: the destination already exists", args.from, args.to));
            }
            make_parent(&to.abs)
                .and_then(|()| fs::rename(&from.abs, &to.abs))
                .map_err(|e| failed("move", &args.from, e))?;
            Ok(format!("moved {} to {}", from.rel, to.rel))
        })
    }

    #[tool(
        description = "Delete a workspace file (not a folder).",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false)
    )]
    fn delete_file(&self, Parameters(args): Parameters<PathArgs>) -> CallToolResult {
        self.mutate(Op::Delete, &args.path, None, |t, _| {
            let meta = fs::symlink_metadata(&t.abs).map_err(|e| failed("delete", &args.path, e))?;
            if meta.is_dir() {
                return Err(format!("cannot delete {}: it is a folder, and delete_file removes files only", args.path));
            }
            fs::remove_file(&t.abs).map_err(|e| failed("delete", &args.path, e))?;
            Ok(format!("deleted {}", t.rel))
        })
    }

    #[tool(
        description = "Create a workspace folder and any missing parents; succeeds if it already exists.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true)
    )]
    fn make_dir(&self, Parameters(args): Parameters<PathArgs>) -> CallToolResult {
        self.mutate(Op::MakeDir, &args.path, None, |t, _| {
            fs::create_dir_all(&t.abs).map_err(|e| failed("make folder", &args.path, e))?;
            Ok(format!("made folder {}", t.rel))
        })
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for WorkspaceServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Files in one workspace folder. Every path is relative to the workspace root; absolute paths and \
                 paths leading outside it are refused.",
            )
    }
}

/// The metadata of a regular file. Anything else is refused before it is opened: a folder cannot be read, and a
/// FIFO would block the server's only thread.
fn regular_file(t: &Target, raw: &str) -> Result<fs::Metadata, String> {
    match fs::metadata(&t.abs) {
        Err(e) => Err(failed("read", raw, e)),
        Ok(meta) if meta.is_dir() => Err(format!("cannot read {raw}: it is a folder (list_dir shows its entries)")),
        Ok(meta) if !meta.is_file() => Err(format!("cannot read {raw}: it is not a regular file")),
        Ok(meta) => Ok(meta),
    }
}

fn make_parent(path: &Path) -> io::Result<()> {
    path.parent().map_or(Ok(()), fs::create_dir_all)
}

/// An I/O failure as the model reads it: what was attempted, on which path, and why.
fn failed(verb: &str, path: &str, e: io::Error) -> String {
    format!("cannot {verb} {path}: {e}")
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn text_result(text: String) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(text)])
}

fn tool_error(text: String) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(text)])
}
