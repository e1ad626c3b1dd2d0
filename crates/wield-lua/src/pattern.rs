//! Lua's pattern functions — `string.find`, `string.match`,
//! `string.gmatch` and `string.gsub` — over a matcher that counts its
//! steps against the call's budget.
//!
//! The instruction hook only runs between Lua instructions, and one call
//! of the C pattern functions is a single instruction: a backtracking
//! pattern such as `a*a*a*a*a*a*b` on a long subject, or the trim idiom
//! `^%s*(.-)%s*$` on a long run of spaces, ran for minutes inside one call
//! with no hook to stop it, ignoring the call's timeout and cancellation.
//! This is the same matcher as Lua 5.4's `lstrlib.c` (the same classes,
//! captures, `%b`, `%f`, back-references, anchors, `gsub` replacements and
//! error messages), written so that every step of the match is counted:
//! each [`crate::sandbox::HOOK_STEP`] steps it asks the budget, exactly as
//! the hook does, so a match ends at the call's instruction limit, deadline
//! or cancellation with the same error the hook gives. A plain `find` uses
//! a linear substring search (C's naive search is quadratic on a subject and
//! pattern such as `aaa…a` and `aa…ab`).

use std::sync::{Arc, Mutex, PoisonError};

use mlua::{Function, Lua, LuaString, MultiValue, Table, Value};

use crate::sandbox::Budget;

/// Captures one pattern may have (`LUA_MAXCAPTURES`).
const MAX_CAPTURES: usize = 32;
/// How deep the matcher may recurse (`MAXCCALLS`): "pattern too complex".
const MAX_DEPTH: usize = 200;
/// A capture that is still open.
const UNFINISHED: isize = -1;
/// A position capture, `()`.
const POSITION: isize = -2;
/// What makes a pattern more than a plain string for `find`.
const SPECIALS: &[u8] = b"^$*+?.([%-";

type R<T> = mlua::Result<T>;

fn fail(message: impl Into<String>) -> mlua::Error {
    mlua::Error::RuntimeError(message.into())
}

/// Counts steps and asks the budget every `HOOK_STEP` of them. What is
/// left over below a whole hook step is carried in the budget to the next
/// pattern call, so many small matches add up like one long one.
struct Meter<'a> {
    budget: &'a Budget,
    count: u64,
}

impl<'a> Meter<'a> {
    fn new(budget: &'a Budget) -> Self {
        Self {
            budget,
            count: budget.take_carry(),
        }
    }

    #[inline]
    fn step(&mut self, n: u64) -> R<()> {
        self.count += n;
        while self.count >= u64::from(crate::sandbox::HOOK_STEP) {
            self.count -= u64::from(crate::sandbox::HOOK_STEP);
            self.budget.tick()?;
        }
        Ok(())
    }
}

impl Drop for Meter<'_> {
    fn drop(&mut self) {
        self.budget.put_carry(self.count);
    }
}

/// One capture's value: a slice of the subject, or a position (1-based).
enum Cap {
    Text(usize, usize),
    Position(usize),
}

/// The state of one match: `lstrlib.c`'s `MatchState`.
struct Matcher<'a, 'm, 'b> {
    src: &'a [u8],
    pat: &'a [u8],
    depth: usize,
    level: usize,
    capture: [(usize, isize); MAX_CAPTURES],
    meter: &'m mut Meter<'b>,
}

impl<'a, 'm, 'b> Matcher<'a, 'm, 'b> {
    fn new(src: &'a [u8], pat: &'a [u8], meter: &'m mut Meter<'b>) -> Self {
        Self {
            src,
            pat,
            depth: MAX_DEPTH,
            level: 0,
            capture: [(0, 0); MAX_CAPTURES],
            meter,
        }
    }

    /// The pattern byte at `i`, or 0 past its end (C's terminating NUL).
    #[inline]
    fn p(&self, i: usize) -> u8 {
        self.pat.get(i).copied().unwrap_or(0)
    }

    /// The subject byte at `i`, or 0 past its end.
    #[inline]
    fn s(&self, i: usize) -> u8 {
        self.src.get(i).copied().unwrap_or(0)
    }

    /// Where the single-character class at `p` ends.
    fn class_end(&self, p: usize) -> R<usize> {
        let len = self.pat.len();
        let c = self.p(p);
        let mut p = p + 1;
        match c {
            b'%' => {
                if p >= len {
                    return Err(fail("malformed pattern (ends with '%')"));
                }
                Ok(p + 1)
            }
            b'[' => {
                if self.p(p) == b'^' {
                    p += 1;
                }
                loop {
                    if p >= len {
                        return Err(fail("malformed pattern (missing ']')"));
                    }
                    let c = self.p(p);
                    p += 1;
                    if c == b'%' && p < len {
                        p += 1;
                    }
                    if self.p(p) == b']' {
                        break;
                    }
                }
                Ok(p + 1)
            }
            _ => Ok(p),
        }
    }

    #[inline]
    fn single(&self, s: usize, p: usize, ep: usize) -> bool {
        if s >= self.src.len() {
            return false;
        }
        let c = self.src[s];
        match self.p(p) {
            b'.' => true,
            b'%' => class(c, self.p(p + 1)),
            b'[' => bracket(c, self.pat, p, ep - 1),
            other => other == c,
        }
    }

    fn do_match(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        if self.depth == 0 {
            return Err(fail("pattern too complex"));
        }
        self.depth -= 1;
        let r = self.match_here(s, p);
        self.depth += 1;
        r
    }

    fn match_here(&mut self, mut s: usize, mut p: usize) -> R<Option<usize>> {
        loop {
            self.meter.step(1)?;
            if p == self.pat.len() {
                return Ok(Some(s));
            }
            match self.pat[p] {
                b'(' => {
                    return if self.p(p + 1) == b')' {
                        self.start_capture(s, p + 2, POSITION)
                    } else {
                        self.start_capture(s, p + 1, UNFINISHED)
                    };
                }
                b')' => return self.end_capture(s, p + 1),
                b'$' if p + 1 == self.pat.len() => return Ok((s == self.src.len()).then_some(s)),
                b'%' if self.p(p + 1) == b'b' => match self.match_balance(s, p + 2)? {
                    Some(next) => {
                        s = next;
                        p += 4;
                    }
                    None => return Ok(None),
                },
                b'%' if self.p(p + 1) == b'f' => {
                    p += 2;
                    if self.p(p) != b'[' {
                        return Err(fail("missing '[' after '%f' in pattern"));
                    }
                    let ep = self.class_end(p)?;
                    let previous = if s == 0 { 0 } else { self.s(s - 1) };
                    if !bracket(previous, self.pat, p, ep - 1) && bracket(self.s(s), self.pat, p, ep - 1) {
                        p = ep;
                    } else {
                        return Ok(None);
                    }
                }
                b'%' if self.p(p + 1).is_ascii_digit() => match self.match_capture(s, self.p(p + 1))? {
                    Some(next) => {
                        s = next;
                        p += 2;
                    }
                    None => return Ok(None),
                },
                _ => {
                    let ep = self.class_end(p)?;
                    let suffix = self.p(ep);
                    if !self.single(s, p, ep) {
                        if matches!(suffix, b'*' | b'?' | b'-') {
                            p = ep + 1;
                            continue;
                        }
                        return Ok(None);
                    }
                    match suffix {
                        b'?' => {
                            if let Some(r) = self.do_match(s + 1, ep + 1)? {
                                return Ok(Some(r));
                            }
                            p = ep + 1;
                        }
                        b'+' => return self.max_expand(s + 1, p, ep),
                        b'*' => return self.max_expand(s, p, ep),
                        b'-' => return self.min_expand(s, p, ep),
                        _ => {
                            s += 1;
                            p = ep;
                        }
                    }
                }
            }
        }
    }

    fn max_expand(&mut self, s: usize, p: usize, ep: usize) -> R<Option<usize>> {
        let mut i = 0;
        while self.single(s + i, p, ep) {
            i += 1;
            self.meter.step(1)?;
        }
        loop {
            if let Some(r) = self.do_match(s + i, ep + 1)? {
                return Ok(Some(r));
            }
            if i == 0 {
                return Ok(None);
            }
            i -= 1;
        }
    }

    fn min_expand(&mut self, mut s: usize, p: usize, ep: usize) -> R<Option<usize>> {
        loop {
            if let Some(r) = self.do_match(s, ep + 1)? {
                return Ok(Some(r));
            }
            if self.single(s, p, ep) {
                s += 1;
            } else {
                return Ok(None);
            }
        }
    }

    fn start_capture(&mut self, s: usize, p: usize, what: isize) -> R<Option<usize>> {
        if self.level >= MAX_CAPTURES {
            return Err(fail("too many captures"));
        }
        self.capture[self.level] = (s, what);
        self.level += 1;
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.level -= 1;
        }
        Ok(r)
    }

    fn end_capture(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        let Some(l) = (0..self.level).rev().find(|&l| self.capture[l].1 == UNFINISHED) else {
            return Err(fail("invalid pattern capture"));
        };
        self.capture[l].1 = isize::try_from(s - self.capture[l].0).unwrap_or(isize::MAX);
        let r = self.do_match(s, p)?;
        if r.is_none() {
            self.capture[l].1 = UNFINISHED;
        }
        Ok(r)
    }

    fn match_balance(&mut self, s: usize, p: usize) -> R<Option<usize>> {
        if p + 1 >= self.pat.len() {
            return Err(fail("malformed pattern (missing arguments to '%b')"));
        }
        if self.s(s) != self.pat[p] {
            return Ok(None);
        }
        let (open, close) = (self.pat[p], self.pat[p + 1]);
        let mut depth = 1usize;
        let mut i = s + 1;
        while i < self.src.len() {
            self.meter.step(1)?;
            let c = self.src[i];
            if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(Some(i + 1));
                }
            } else if c == open {
                depth += 1;
            }
            i += 1;
        }
        Ok(None)
    }

    fn match_capture(&mut self, s: usize, digit: u8) -> R<Option<usize>> {
        let l = usize::from(digit).wrapping_sub(usize::from(b'1'));
        if l >= self.level || self.capture[l].1 == UNFINISHED {
            return Err(fail(format!("invalid capture index %{}", l.wrapping_add(1) as isize)));
        }
        let (init, len) = self.capture[l];
        let Ok(len) = usize::try_from(len) else {
            return Ok(None);
        };
        self.meter.step(len as u64)?;
        if self.src.len() - s >= len && self.src[init..init + len] == self.src[s..s + len] {
            Ok(Some(s + len))
        } else {
            Ok(None)
        }
    }

    /// Capture `i` of a match of `s..e` (the whole match when the pattern
    /// has no captures).
    fn one_capture(&self, i: usize, s: usize, e: usize) -> R<Cap> {
        if i >= self.level {
            if i != 0 {
                return Err(fail(format!("invalid capture index %{}", i + 1)));
            }
            return Ok(Cap::Text(s, e));
        }
        let (init, len) = self.capture[i];
        match len {
            UNFINISHED => Err(fail("unfinished capture")),
            POSITION => Ok(Cap::Position(init + 1)),
            len => Ok(Cap::Text(init, init + len.unsigned_abs())),
        }
    }

    fn capture_value(&self, lua: &Lua, i: usize, s: usize, e: usize) -> R<Value> {
        Ok(match self.one_capture(i, s, e)? {
            Cap::Text(a, b) => Value::String(lua.create_string(&self.src[a..b])?),
            Cap::Position(n) => Value::Integer(int(n)),
        })
    }

    /// The captures of a match of `s..e` as values: the whole match when
    /// the pattern has none and `s` is given (`find` gives none).
    fn captures(&self, lua: &Lua, s: Option<usize>, e: usize) -> R<Vec<Value>> {
        let n = if self.level == 0 && s.is_some() { 1 } else { self.level };
        let s = s.unwrap_or(0);
        (0..n).map(|i| self.capture_value(lua, i, s, e)).collect()
    }
}

fn int(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `%a`, `%d`, ... in the C locale; an upper-case class is its complement,
/// any other character stands for itself.
fn class(c: u8, cl: u8) -> bool {
    let res = match cl.to_ascii_lowercase() {
        b'a' => c.is_ascii_alphabetic(),
        b'c' => c.is_ascii_control(),
        b'd' => c.is_ascii_digit(),
        b'g' => c.is_ascii_graphic(),
        b'l' => c.is_ascii_lowercase(),
        b'p' => c.is_ascii_punctuation(),
        b's' => matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r'),
        b'u' => c.is_ascii_uppercase(),
        b'w' => c.is_ascii_alphanumeric(),
        b'x' => c.is_ascii_hexdigit(),
        _ => return cl == c,
    };
    if cl.is_ascii_uppercase() { !res } else { res }
}

/// Whether `c` is in the set `[...]` that starts at `p` and whose `]` is at
/// `ec`.
fn bracket(c: u8, pat: &[u8], mut p: usize, ec: usize) -> bool {
    let at = |i: usize| pat.get(i).copied().unwrap_or(0);
    let mut sig = true;
    if at(p + 1) == b'^' {
        sig = false;
        p += 1;
    }
    loop {
        p += 1;
        if p >= ec {
            return !sig;
        }
        if at(p) == b'%' {
            p += 1;
            if class(c, at(p)) {
                return sig;
            }
        } else if at(p + 1) == b'-' && p + 2 < ec {
            p += 2;
            if at(p - 2) <= c && c <= at(p) {
                return sig;
            }
        } else if at(p) == c {
            return sig;
        }
    }
}

/// A 1-based, possibly negative position as Lua's `posrelatI` makes it.
fn position(pos: i64, len: usize) -> usize {
    if pos > 0 {
        usize::try_from(pos).unwrap_or(usize::MAX)
    } else if pos == 0 || pos.unsigned_abs() > len as u64 {
        1
    } else {
        len - usize::try_from(pos.unsigned_abs()).unwrap_or(len) + 1
    }
}

/// Argument `n` of `name` as a string (numbers are converted, as in Lua).
fn string_arg(lua: &Lua, v: Value, n: usize, name: &str) -> R<LuaString> {
    let ty = v.type_name();
    lua.coerce_string(v)?
        .ok_or_else(|| fail(format!("bad argument #{n} to '{name}' (string expected, got {ty})")))
}

/// Optional integer argument `n` of `name`.
fn int_arg(lua: &Lua, v: Value, n: usize, name: &str) -> R<Option<i64>> {
    if v.is_nil() {
        return Ok(None);
    }
    let ty = v.type_name();
    if let Some(i) = lua.coerce_integer(v.clone())? {
        return Ok(Some(i));
    }
    let why = match lua.coerce_number(v)? {
        Some(_) => "number has no integer representation".to_owned(),
        None => format!("number expected, got {ty}"),
    };
    Err(fail(format!("bad argument #{n} to '{name}' ({why})")))
}

fn values(v: Vec<Value>) -> MultiValue {
    MultiValue::from_vec(v)
}

/// `string.find` (`find = true`) and `string.match`.
fn find(lua: &Lua, budget: &Budget, args: (Value, Value, Value, Value), find: bool) -> R<MultiValue> {
    let name = if find { "find" } else { "match" };
    let subject = string_arg(lua, args.0, 1, name)?;
    let pattern = string_arg(lua, args.1, 2, name)?;
    let (s, p) = (subject.as_bytes(), pattern.as_bytes());
    let init = position(int_arg(lua, args.2, 3, name)?.unwrap_or(1), s.len()) - 1;
    if init > s.len() {
        return Ok(values(vec![Value::Nil]));
    }
    let plain = !matches!(args.3, Value::Nil | Value::Boolean(false));
    if find && (plain || !p.iter().any(|c| SPECIALS.contains(c))) {
        return Ok(match memchr::memmem::find(&s[init..], &p) {
            Some(at) => values(vec![
                Value::Integer(int(init + at + 1)),
                Value::Integer(int(init + at + p.len())),
            ]),
            None => values(vec![Value::Nil]),
        });
    }
    let anchor = p.first() == Some(&b'^');
    let pat = if anchor { &p[1..] } else { &p[..] };
    let mut meter = Meter::new(budget);
    let mut m = Matcher::new(&s, pat, &mut meter);
    let mut s1 = init;
    loop {
        m.level = 0;
        if let Some(e) = m.do_match(s1, 0)? {
            return Ok(values(if find {
                let mut out = vec![Value::Integer(int(s1 + 1)), Value::Integer(int(e))];
                out.extend(m.captures(lua, None, 0)?);
                out
            } else {
                m.captures(lua, Some(s1), e)?
            }));
        }
        if anchor || s1 >= s.len() {
            return Ok(values(vec![Value::Nil]));
        }
        s1 += 1;
    }
}

/// `string.gmatch(s, pattern [, init])`: an iterator over the matches (a
/// `^` is not an anchor here, as in Lua).
fn gmatch(lua: &Lua, budget: &Arc<Budget>, args: (Value, Value, Value)) -> R<Function> {
    let subject = string_arg(lua, args.0, 1, "gmatch")?;
    let pattern = string_arg(lua, args.1, 2, "gmatch")?;
    let len = subject.as_bytes().len();
    let init = (position(int_arg(lua, args.2, 3, "gmatch")?.unwrap_or(1), len) - 1).min(len + 1);
    // Where the next search starts, and where the last match ended.
    let state = Arc::new(Mutex::new((init, None::<usize>)));
    let budget = Arc::clone(budget);
    lua.create_function(move |lua, ()| {
        let (s, p) = (subject.as_bytes(), pattern.as_bytes());
        let mut state = state.lock().unwrap_or_else(PoisonError::into_inner);
        let mut meter = Meter::new(&budget);
        let mut m = Matcher::new(&s, &p, &mut meter);
        let mut src = state.0;
        while src <= s.len() {
            m.level = 0;
            if let Some(e) = m.do_match(src, 0)?
                && Some(e) != state.1
            {
                *state = (e, Some(e));
                return Ok(values(m.captures(lua, Some(src), e)?));
            }
            src += 1;
        }
        Ok(MultiValue::new())
    })
}

/// What `gsub` replaces a match with.
enum Replacement {
    Text(LuaString),
    Function(Function),
    Table(Table),
}

/// `string.gsub(s, pattern, repl [, n])`.
fn gsub(lua: &Lua, budget: &Budget, args: (Value, Value, Value, Value)) -> R<(Value, i64)> {
    let subject = string_arg(lua, args.0, 1, "gsub")?;
    let pattern = string_arg(lua, args.1, 2, "gsub")?;
    let repl = match args.2 {
        v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => {
            Replacement::Text(string_arg(lua, v, 3, "gsub")?)
        }
        Value::Function(f) => Replacement::Function(f),
        Value::Table(t) => Replacement::Table(t),
        other => {
            return Err(fail(format!(
                "bad argument #3 to 'gsub' (string/function/table expected, got {})",
                other.type_name()
            )));
        }
    };
    let (s, p) = (subject.as_bytes(), pattern.as_bytes());
    let max = int_arg(lua, args.3, 4, "gsub")?.unwrap_or_else(|| int(s.len() + 1));
    let anchor = p.first() == Some(&b'^');
    let pat = if anchor { &p[1..] } else { &p[..] };
    let limit = budget.memory_limit();
    let mut meter = Meter::new(budget);
    let mut m = Matcher::new(&s, pat, &mut meter);
    let mut out: Vec<u8> = Vec::new();
    let (mut src, mut last, mut n, mut changed) = (0usize, None::<usize>, 0i64, false);
    while n < max {
        m.level = 0;
        match m.do_match(src, 0)? {
            Some(e) if Some(e) != last => {
                n += 1;
                changed |= add_value(lua, &mut m, &mut out, src, e, &repl)?;
                src = e;
                last = Some(e);
            }
            _ if src < s.len() => {
                out.push(s[src]);
                src += 1;
            }
            _ => break,
        }
        // The result is built outside Lua's allocator: hold it to the
        // state's memory limit all the same.
        if out.len() > limit {
            return Err(mlua::Error::MemoryError(
                "gsub: the result is larger than the memory limit".into(),
            ));
        }
        if anchor {
            break;
        }
    }
    if !changed {
        return Ok((Value::String(subject.clone()), n));
    }
    out.extend_from_slice(&s[src..]);
    Ok((Value::String(lua.create_string(&out)?), n))
}

/// Append the replacement of the match `s..e`; whether it changed the text.
fn add_value(
    lua: &Lua,
    m: &mut Matcher<'_, '_, '_>,
    out: &mut Vec<u8>,
    s: usize,
    e: usize,
    repl: &Replacement,
) -> R<bool> {
    let value = match repl {
        Replacement::Text(text) => {
            let text = text.as_bytes();
            m.meter.step(text.len() as u64)?;
            let mut i = 0;
            while i < text.len() {
                let c = text[i];
                i += 1;
                if c != b'%' {
                    out.push(c);
                    continue;
                }
                let d = text.get(i).copied().unwrap_or(0);
                i += 1;
                match d {
                    b'%' => out.push(b'%'),
                    b'0' => out.extend_from_slice(&m.src[s..e]),
                    b'1'..=b'9' => match m.one_capture(usize::from(d - b'1'), s, e)? {
                        Cap::Text(a, b) => out.extend_from_slice(&m.src[a..b]),
                        Cap::Position(p) => out.extend_from_slice(p.to_string().as_bytes()),
                    },
                    _ => return Err(fail("invalid use of '%' in replacement string")),
                }
                m.meter.step((out.len() / 4096) as u64)?;
            }
            return Ok(true);
        }
        Replacement::Function(f) => f.call::<Value>(MultiValue::from_vec(m.captures(lua, Some(s), e)?))?,
        Replacement::Table(t) => t.get::<Value>(m.capture_value(lua, 0, s, e)?)?,
    };
    match value {
        Value::Nil | Value::Boolean(false) => {
            out.extend_from_slice(&m.src[s..e]);
            Ok(false)
        }
        v @ (Value::String(_) | Value::Integer(_) | Value::Number(_)) => {
            if let Some(text) = lua.coerce_string(v)? {
                out.extend_from_slice(&text.as_bytes());
            }
            Ok(true)
        }
        other => Err(fail(format!("invalid replacement value (a {})", other.type_name()))),
    }
}

/// Put the counted pattern functions in `string` (the table strings'
/// methods come from as well).
pub(crate) fn install(lua: &Lua, string: &Table, budget: &Arc<Budget>) -> mlua::Result<()> {
    for (name, is_find) in [("find", true), ("match", false)] {
        let b = Arc::clone(budget);
        string.raw_set(
            name,
            lua.create_function(move |lua, args: (Value, Value, Value, Value)| find(lua, &b, args, is_find))?,
        )?;
    }
    let b = Arc::clone(budget);
    string.raw_set(
        "gmatch",
        lua.create_function(move |lua, args: (Value, Value, Value)| gmatch(lua, &b, args))?,
    )?;
    let b = Arc::clone(budget);
    string.raw_set(
        "gsub",
        lua.create_function(move |lua, args: (Value, Value, Value, Value)| gsub(lua, &b, args))?,
    )?;
    Ok(())
}
