//! Async sources in Flemma's shape: a file returning `{ timeout = 30,
//! resolve = function(register, done) ... end }`. `register(name, def)`
//! adds a tool, `done(err?)` says the source is finished (a second call is
//! harmless); an error in `resolve` is `done(err)`. The registry's sources
//! wait for `done` up to the timeout, so a source that never calls it is a
//! warning, not a hang: at the timeout when `resolve` runs on (its budget
//! ends it then), at once when it returns without calling `done` (nothing
//! could call it later).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mlua::{Function, Table, Value};
use wield_core::{SourceDone, SourceFn, SourceRegister};

use crate::error::message;
use crate::tool::{LuaTool, Script};

/// One async source file.
pub struct AsyncSource {
    /// `lua:PATH`, the registry's source name.
    pub name: String,
    pub timeout: Duration,
    pub(crate) script: Arc<Script>,
    pub(crate) resolve: Function,
}

impl AsyncSource {
    /// Queue the source in `registry` (it starts in `load_sources`).
    pub fn add_to(self, registry: &mut wield_core::Registry) {
        let name = self.name.clone();
        let timeout = self.timeout;
        registry.add_source(name, timeout, self.into_source_fn());
    }

    fn into_source_fn(self) -> SourceFn {
        Box::new(move |register: SourceRegister, done: SourceDone| {
            let deadline = Instant::now() + self.timeout;
            // On the state's own thread, after (and never beside) a call of
            // its tools: the resolve function runs to its end (or its
            // budget's).
            let script = Arc::clone(&self.script);
            let done_here = done.clone();
            let job = Box::new(move || {
                let outcome = self.run(register, done.clone(), deadline);
                if let Err(e) = outcome {
                    done.done(Err(e));
                }
            });
            if let Err(e) = script.on_thread(job) {
                done_here.done(Err(e));
            }
        })
    }

    fn run(&self, register: SourceRegister, done: SourceDone, deadline: Instant) -> Result<(), String> {
        let sandbox = &self.script.sandbox;
        let lua = &sandbox.lua;
        let script = Arc::clone(&self.script);
        let origin = self.script.origin.clone();
        // `register` and `done` work while `resolve` runs: a script that
        // kept them (in a global, for a tool of its own to call later)
        // cannot add tools once the registry took the source's.
        let open = Arc::new(AtomicBool::new(true));
        let ended = || mlua::Error::runtime("the source has ended: register and done work only while resolve runs");
        let open_here = Arc::clone(&open);
        let register_fn = lua
            .create_function(move |_, (name, def): (String, Table)| {
                if !open_here.load(Ordering::Acquire) {
                    return Err(ended());
                }
                if def.get::<Value>("name")?.is_nil() {
                    def.set("name", name.as_str())?;
                }
                match LuaTool::from_table(&script, &def, &origin) {
                    Ok(tool) => {
                        register.register(Arc::new(tool));
                        Ok((true, None))
                    }
                    Err(e) => {
                        tracing::warn!("{e}");
                        Ok((false, Some(e.to_string())))
                    }
                }
            })
            .map_err(|e| message(&e))?;
        let done_now = done.clone();
        let open_here = Arc::clone(&open);
        let done_fn = lua
            .create_function(move |_, err: Value| {
                if !open_here.load(Ordering::Acquire) {
                    return Err(ended());
                }
                let result = match err {
                    Value::Nil | Value::Boolean(false) => Ok(()),
                    other => Err(crate::sandbox::display(&other)),
                };
                done.done(result);
                Ok(())
            })
            .map_err(|e| message(&e))?;
        sandbox.start(Some(deadline), None);
        let called = self.resolve.call::<()>((register_fn, done_fn));
        open.store(false, Ordering::Release);
        called.map_err(|e| format!("resolve failed: {}", message(&e)))?;
        // Nothing can call `done` once `resolve` has returned (a script has
        // no timers or callbacks): say so now rather than at the timeout.
        // Ignored when `done` was called.
        done_now.done(Err(
            "resolve returned without calling done(), so its tools are left out; call done() when they are registered"
                .to_owned(),
        ));
        Ok(())
    }
}
