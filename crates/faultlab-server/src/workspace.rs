//! The built-in workspace server: file tools confined to one folder, every side effect logged to a ledger.
//!
//! `faultlab eval` runs agents against it (behind the fault proxy) and grades what they did from the folder and
//! the ledger. Every path is relative to the workspace root. A path that is absolute or climbs out with `..` is
//! refused before anything touches the disk. The rest is opened one component at a time beneath the root's
//! handle, never through a symlink (wherever it points), so a folder swapped for a symlink between a check and
//! a write cannot lead out; a file with more than one hard link is never changed, deleted or moved.
//! Failures are tool results with `isError: true`, so the model can read them; JSON-RPC errors are left to
//! protocol problems.
//!
//! With confirmation on ([`WorkspaceServer::confirming`]), a destructive write (`write_file` over an existing file,
//! `delete_file`) first asks the user through the client (`elicitation/create`, form mode, one boolean
//! `confirm`) and happens only on an `accept` with `confirm: true`; a decline, a cancel, no answer, or a client
//! that did not declare elicitation leaves the file as it was, and the ledger records the refusal (`ok: false`).

use crate::tools::askback::{self, Ask};
use cap_fs_ext::{DirExt as _, FollowSymlinks, OpenOptionsExt as _, OpenOptionsFollowExt as _, OsMetadataExt as _};
use cap_std::ambient_authority;
use cap_std::fs::Dir;
use faultlab_engine::ledger::{Op, SideEffect};
use faultlab_wire::sync::lock;
use rmcp::handler::server::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use sha2::{Digest, Sha256};
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The name the workspace server reports in `serverInfo`.
pub const SERVER_NAME: &str = "faultlab-workspace";
/// Largest file `read_file` returns (1 MiB): more would not help a model, and the reply must stay one sane line.
pub const MAX_READ_BYTES: u64 = 1024 * 1024;
/// How long a confirmation waits for the user's answer (60 s): longer than a task's deadline is sized, so an
/// agent that never answers is stopped by its own deadline, not let off by the server; still bounded, so a call
/// cannot be held open by a silent client for ever.
pub const CONFIRM_TIMEOUT: Duration = Duration::from_secs(60);
/// Confirmations pending at once on the one connection; a call past it is refused without asking.
pub const MAX_PENDING_CONFIRMATIONS: usize = 16;

/// Why the server cannot start. The reason is part of the message, not a `source`, so `{:#}` does not repeat it.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("cannot use workspace root {}: {reason}", path.display())]
    Root { path: PathBuf, reason: io::Error },
    #[error("cannot open ledger {}: {reason}", path.display())]
    Ledger { path: PathBuf, reason: io::Error },
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
    fn record(&mut self, mut entry: SideEffect) {
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

/// A path the agent gave, checked lexically: its parts beneath the root (no `.`, `..`, or root), and how the
/// ledger names it (relative, `/`-separated). Nothing on disk has been looked at yet.
struct Target {
    parts: Vec<OsString>,
    rel: String,
}

/// What a successful tool did: the text for the model, and the SHA-256 of the bytes written (write and append).
struct Done {
    text: String,
    sha256: Option<String>,
}

impl From<String> for Done {
    fn from(text: String) -> Self {
        Self { text, sha256: None }
    }
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
    /// The root, opened once: every path is resolved beneath this handle, never by its name, so renaming or
    /// replacing the root's path later cannot redirect the server.
    root: Dir,
    ledger: Mutex<Ledger>,
    router: ToolRouter<Self>,
    /// Ask the user before a destructive write.
    confirm: bool,
    /// Confirmations awaiting an answer now.
    pending: AtomicUsize,
}

/// Holds one of the [`MAX_PENDING_CONFIRMATIONS`] places until the confirmation ends, however it ends.
struct Pending<'a>(&'a AtomicUsize);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

impl WorkspaceServer {
    /// A server confined to `root` (which must be a readable folder), appending side effects to `ledger` if given.
    pub fn open(root: &Path, ledger: Option<&Path>) -> Result<Self, OpenError> {
        let bad_root = |reason| OpenError::Root { path: root.to_owned(), reason };
        fs::read_dir(root).map_err(bad_root)?;
        let canonical = root.canonicalize().map_err(bad_root)?;
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority()).map_err(bad_root)?;
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
        Ok(Self { root: dir, ledger, router: Self::tool_router(), confirm: false, pending: AtomicUsize::new(0) })
    }

    /// Asks the user (`elicitation/create`, form mode) before every destructive write: overwriting an existing
    /// file with `write_file`, and `delete_file`.
    pub fn confirming(mut self) -> Self {
        self.confirm = true;
        self
    }

    /// Whether `raw` names an existing entry of the workspace (not following a symlink); a path that cannot be
    /// resolved is left to the tool, which refuses it with its own reason.
    fn exists(&self, raw: &str) -> bool {
        let Ok(t) = self.resolve(raw) else { return false };
        match self.open_parent("check", raw, &t, false) {
            Ok((dir, Some(name))) => dir.symlink_metadata(&name).is_ok(),
            _ => false,
        }
    }

    /// With confirmation on and `raw` existing, asks the user whether to `verb` it; `Err` says why it must not
    /// happen (the user declined or cancelled, did not answer in time, or cannot be asked).
    async fn confirmed(&self, ctx: &RequestContext<RoleServer>, verb: &str, raw: &str) -> Result<(), String> {
        if !self.confirm || !self.exists(raw) {
            return Ok(());
        }
        let refused = |why: &str| format!("refused to {verb} {raw}: {why}; nothing was changed");
        if !askback::declared(ctx, Ask::ElicitationForm) {
            return Err(refused(
                "it needs the user's confirmation, and the client did not declare the elicitation capability (form mode)",
            ));
        }
        if self.pending.fetch_add(1, Ordering::SeqCst) >= MAX_PENDING_CONFIRMATIONS {
            self.pending.fetch_sub(1, Ordering::SeqCst);
            return Err(refused(&format!("{MAX_PENDING_CONFIRMATIONS} confirmations are already pending")));
        }
        let _place = Pending(&self.pending);
        let params = serde_json::json!({
            "mode": "form",
            "message": format!("Confirm: {verb} {raw} in the workspace? This cannot be undone."),
            "requestedSchema": {
                "type": "object",
                "properties": {"confirm": {"type": "boolean", "description": format!("{verb} {raw}")}},
                "required": ["confirm"]
            }
        });
        let answer = tokio::select! {
            answer = askback::ask(ctx, "elicitation/create", params, CONFIRM_TIMEOUT) => answer,
            () = ctx.ct.cancelled() => return Err(refused("the call was cancelled while the user was asked")),
        };
        let confirmed = answer.answer.as_ref().and_then(|a| a.pointer("/content/confirm")).and_then(|c| c.as_bool());
        match (answer.outcome, confirmed) {
            ("accept", Some(true)) => Ok(()),
            ("accept", _) => Err(refused("the user accepted the form without confirming (confirm is not true)")),
            ("decline", _) => Err(refused("the user declined")),
            ("cancel", _) => Err(refused("the user cancelled")),
            ("timeout", _) => Err(refused(&format!("the user did not answer within {} s", CONFIRM_TIMEOUT.as_secs()))),
            (other, _) => Err(refused(&format!("the confirmation failed ({other})"))),
        }
    }

    /// Checks a path the agent gave, lexically: `..` is applied and must not climb above the root; an absolute
    /// path is refused. Symlinks are dealt with when the path is opened (see [`Self::open_dirs`]).
    fn resolve(&self, raw: &str) -> Result<Target, String> {
        let escapes = || format!("path escapes the workspace: {raw}");
        let mut parts = Vec::new();
        for part in Path::new(raw).components() {
            match part {
                Component::Normal(name) => parts.push(name.to_owned()),
                Component::CurDir => {}
                Component::ParentDir => {
                    parts.pop().ok_or_else(escapes)?;
                }
                Component::RootDir | Component::Prefix(_) => return Err(escapes()),
            }
        }
        let rel = parts.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>().join("/");
        Ok(Target { parts, rel: if rel.is_empty() { ".".into() } else { rel } })
    }

    /// Opens the folders `parts` one at a time, each beneath the one before and never through a symlink, so what
    /// is opened is what was checked even while something else rewrites the tree. With `create`, missing folders
    /// are made on the way.
    fn open_dirs(&self, verb: &str, raw: &str, parts: &[OsString], create: bool) -> Result<Dir, String> {
        let mut dir = self.root.try_clone().map_err(|e| failed(verb, raw, e))?;
        for (i, name) in parts.iter().enumerate() {
            let mut next = dir.open_dir_nofollow(name);
            if create && next.as_ref().is_err_and(|e| e.kind() == io::ErrorKind::NotFound) {
                match dir.create_dir(name) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(failed(verb, raw, e)),
                }
                next = dir.open_dir_nofollow(name);
            }
            dir = next.map_err(|e| refused(&dir, name, &parts[..=i], verb, raw, e))?;
        }
        Ok(dir)
    }

    /// The folder holding the target and the target's name in it; `None` for the root itself.
    fn open_parent(&self, verb: &str, raw: &str, t: &Target, create: bool) -> Result<(Dir, Option<OsString>), String> {
        let Some((name, folders)) = t.parts.split_last() else {
            return Ok((self.root.try_clone().map_err(|e| failed(verb, raw, e))?, None));
        };
        Ok((self.open_dirs(verb, raw, folders, create)?, Some(name.clone())))
    }

    /// Opens a regular file of the workspace for reading: not through a symlink, and never a FIFO or a device
    /// (opened non-blocking and checked on the open handle, so nothing can be swapped in between).
    fn open_file(&self, raw: &str, t: &Target) -> Result<File, String> {
        let (dir, name) = self.open_parent("read", raw, t, false)?;
        let Some(name) = name else { return Err(is_folder_for_read(raw)) };
        let mut options = cap_std::fs::OpenOptions::new();
        options.read(true).follow(FollowSymlinks::No).custom_flags(libc::O_NONBLOCK);
        let file = dir.open_with(&name, &options).map_err(|e| refused(&dir, &name, &t.parts, "read", raw, e))?;
        let file = file.into_std();
        match file.metadata() {
            Err(e) => Err(failed("read", raw, e)),
            Ok(meta) if meta.is_dir() => Err(is_folder_for_read(raw)),
            Ok(meta) if !meta.is_file() => Err(format!("cannot read {raw}: it is not a regular file")),
            Ok(_) => Ok(file),
        }
    }

    /// Writes (or appends) `content` to a workspace file through one handle: opened beneath the root without
    /// following a symlink, refused if it has another hard link (the other name may be outside the workspace),
    /// and hashed from that same handle, so the ledger's hash is of the file really written.
    fn write(&self, op: Op, raw: &str, t: &Target, content: &str) -> Result<Done, String> {
        let verb = if matches!(op, Op::Append) { "append to" } else { "write" };
        let (dir, name) = self.open_parent(verb, raw, t, true)?;
        let Some(name) = name else { return Err(format!("cannot {verb} {raw}: it is a folder")) };
        let mut options = cap_std::fs::OpenOptions::new();
        // Not truncated on open: the link count is checked first, and a refused write must change nothing.
        options.read(true).write(true).create(true).follow(FollowSymlinks::No).custom_flags(libc::O_NONBLOCK);
        if matches!(op, Op::Append) {
            options.append(true);
        }
        let file = dir.open_with(&name, &options).map_err(|e| refused(&dir, &name, &t.parts, verb, raw, e))?;
        let mut file = file.into_std();
        let meta = file.metadata().map_err(|e| failed(verb, raw, e))?;
        if meta.is_dir() {
            return Err(format!("cannot {verb} {raw}: it is a folder"));
        }
        if !meta.is_file() {
            return Err(format!("cannot {verb} {raw}: it is not a regular file"));
        }
        hard_links(verb, raw, meta.nlink())?;
        let mut bytes = Vec::new();
        let written = (|| {
            if matches!(op, Op::Write) {
                file.set_len(0)?;
            }
            file.write_all(content.as_bytes())?;
            file.seek(SeekFrom::Start(0))?;
            file.read_to_end(&mut bytes)
        })();
        written.map_err(|e| failed(verb, raw, e))?;
        let text = match op {
            Op::Append => format!("appended {} bytes to {}", content.len(), t.rel),
            _ => format!("wrote {} bytes to {}", content.len(), t.rel),
        };
        Ok(Done { text, sha256: Some(sha256_hex(&bytes)) })
    }

    /// Performs one side effect and records it, refused or not. On success the ledger names the normalised
    /// paths (the files really touched, since no symlink is followed); on failure the paths as the agent gave them.
    fn mutate(
        &self,
        op: Op,
        path: &str,
        to: Option<&str>,
        effect: impl FnOnce(&Target, Option<&Target>) -> Result<Done, String>,
    ) -> CallToolResult {
        let mut ledger = lock(&self.ledger);
        if let Some(broken) = &ledger.broken {
            return tool_error(format!("refused: the side-effect ledger cannot be written ({broken})"));
        }
        let outcome = self.resolve(path).and_then(|from| {
            let dest = to.map(|to| self.resolve(to)).transpose()?;
            let done = effect(&from, dest.as_ref())?;
            Ok((from, dest, done))
        });
        let (path, to) = (path.to_owned(), to.map(str::to_owned));
        let mut entry =
            SideEffect { seq: 0, tool: op.tool().into(), op, path, to, ok: false, error: None, sha256: None };
        let result = match outcome {
            Ok((from, dest, done)) => {
                (entry.ok, entry.path, entry.to) = (true, from.rel, dest.map(|d| d.rel));
                entry.sha256 = done.sha256;
                text_result(done.text)
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
            let file = self.open_file(&args.path, &t)?;
            let size = file.metadata().map_err(|e| failed("read", &args.path, e))?.len();
            if size > MAX_READ_BYTES {
                return Err(format!("cannot read {}: it has {size} bytes, more than {MAX_READ_BYTES}", args.path));
            }
            let mut bytes = Vec::new();
            // Bounded even if the file grows after the size check.
            file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(|e| failed("read", &args.path, e))?;
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
            let dir = self.open_dirs("list", raw, &t.parts, false)?;
            let mut names = Vec::new();
            for entry in dir.entries().map_err(|e| failed("list", raw, e))? {
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
            let mut bytes = Vec::new();
            self.open_file(&args.path, &t)?.read_to_end(&mut bytes).map_err(|e| failed("read", &args.path, e))?;
            let info = serde_json::json!({"path": t.rel, "bytes": bytes.len(), "sha256": sha256_hex(&bytes)});
            Ok(info.to_string())
        });
        info.map_or_else(tool_error, text_result)
    }

    #[tool(
        description = "Write text to a workspace file, replacing it if it exists; missing parent folders are created.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true)
    )]
    async fn write_file(
        &self,
        Parameters(args): Parameters<WriteArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let confirmed = self.confirmed(&ctx, "overwrite", &args.path).await;
        self.mutate(Op::Write, &args.path, None, |t, _| {
            confirmed?;
            self.write(Op::Write, &args.path, t, &args.content)
        })
    }

    #[tool(
        description = "Append text to the end of a workspace file, creating it (and missing parent folders) if needed.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false)
    )]
    fn append_file(&self, Parameters(args): Parameters<WriteArgs>) -> CallToolResult {
        self.mutate(Op::Append, &args.path, None, |t, _| self.write(Op::Append, &args.path, t, &args.content))
    }

    #[tool(
        description = "Move or rename a workspace file or folder. Fails if the destination already exists; missing \
                       parent folders of the destination are created.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false)
    )]
    fn move_file(&self, Parameters(args): Parameters<MoveArgs>) -> CallToolResult {
        let (raw_from, raw_to) = (&args.from, &args.to);
        self.mutate(Op::Move, raw_from, Some(raw_to), |from, to| {
            let to = to.ok_or_else(|| "move_file needs a destination".to_owned())?;
            let (from_dir, from_name) = self.open_parent("move", raw_from, from, false)?;
            let Some(from_name) = from_name else {
                return Err(format!("cannot move {raw_from}: it is the workspace root"));
            };
            let meta = from_dir.symlink_metadata(&from_name).map_err(|e| failed("move", raw_from, e))?;
            if !meta.is_dir() {
                hard_links("move", raw_from, meta.nlink())?;
            }
            let (to_dir, to_name) = self.open_parent("move", raw_to, to, true)?;
            let exists = || format!("cannot move {raw_from} to {raw_to}: the destination already exists");
            let to_name = to_name.ok_or_else(exists)?;
            if to_dir.symlink_metadata(&to_name).is_ok() {
                return Err(exists());
            }
            from_dir.rename(&from_name, &to_dir, &to_name).map_err(|e| failed("move", raw_from, e))?;
            Ok(format!("moved {} to {}", from.rel, to.rel).into())
        })
    }

    #[tool(
        description = "Delete a workspace file (not a folder).",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false)
    )]
    async fn delete_file(
        &self,
        Parameters(args): Parameters<PathArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let raw = &args.path;
        let confirmed = self.confirmed(&ctx, "delete", raw).await;
        self.mutate(Op::Delete, raw, None, |t, _| {
            confirmed?;
            let folder = || format!("cannot delete {raw}: it is a folder, and delete_file removes files only");
            let (dir, name) = self.open_parent("delete", raw, t, false)?;
            let name = name.ok_or_else(folder)?;
            let meta = dir.symlink_metadata(&name).map_err(|e| failed("delete", raw, e))?;
            if meta.is_dir() {
                return Err(folder());
            }
            hard_links("delete", raw, meta.nlink())?;
            dir.remove_file(&name).map_err(|e| failed("delete", raw, e))?;
            Ok(format!("deleted {}", t.rel).into())
        })
    }

    #[tool(
        description = "Create a workspace folder and any missing parents; succeeds if it already exists.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true)
    )]
    fn make_dir(&self, Parameters(args): Parameters<PathArgs>) -> CallToolResult {
        self.mutate(Op::MakeDir, &args.path, None, |t, _| {
            self.open_dirs("make folder", &args.path, &t.parts, true)?;
            Ok(format!("made folder {}", t.rel).into())
        })
    }
}

#[tool_handler(router = self.router)]
impl ServerHandler for WorkspaceServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Files in one workspace folder. Every path is relative to the workspace root; absolute paths, paths \
                 leading outside it, and paths through a symlink are refused.",
            )
    }
}

fn is_folder_for_read(raw: &str) -> String {
    format!("cannot read {raw}: it is a folder (list_dir shows its entries)")
}

/// A file with more than one name may share its content with a file outside the workspace: changing it through
/// the inside name would change the outside one.
fn hard_links(verb: &str, raw: &str, links: u64) -> Result<(), String> {
    if links > 1 {
        return Err(format!(
            "refused to {verb} {raw}: it has {links} hard links, and one may lead outside the workspace"
        ));
    }
    Ok(())
}

/// Why `name` (in `dir`, reached by `parts`) could not be opened. A symlink is named as the reason: the server
/// follows none, wherever it points.
fn refused(dir: &Dir, name: &OsStr, parts: &[OsString], verb: &str, raw: &str, e: io::Error) -> String {
    if dir.symlink_metadata(name).is_ok_and(|meta| meta.file_type().is_symlink()) {
        let link = parts.iter().map(|p| p.to_string_lossy()).collect::<Vec<_>>().join("/");
        return format!("refused to {verb} {raw}: {link} is a symlink, and the workspace follows no symlinks");
    }
    failed(verb, raw, e)
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
