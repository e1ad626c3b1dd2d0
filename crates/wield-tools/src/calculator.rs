//! `calculator`: evaluates an arithmetic expression.
//!
//! A small recursive-descent parser over `+ - * / % ^`, parentheses, unary
//! minus, the functions sqrt, abs, floor, ceil, round, min, max, ln, log,
//! sin, cos, tan and the constants pi and e. Errors name the 1-based
//! character position so a model can fix the expression.

use async_trait::async_trait;
use serde_json::{Value, json};
use wield_core::{Context, Tool, ToolBase, ToolResult, ToolSpec, ToolTraits};

pub struct Calculator {
    base: ToolBase,
}

impl Default for Calculator {
    fn default() -> Self {
        Self::new()
    }
}

impl Calculator {
    pub fn new() -> Self {
        Self {
            base: ToolBase::new(
                ToolSpec::new(
                    "calculator",
                    "Evaluate an arithmetic expression. Operators: + - * / % ^ (power), parentheses, unary minus. \
                     Functions: sqrt, abs, floor, ceil, round, min(a, b, ...), max(a, b, ...), ln, log (base 10), \
                     sin, cos, tan (radians). Constants: pi, e. Example: \"(1+2)*3\" gives 9.",
                    json!({
                        "type": "object",
                        "properties": {
                            "expression": {"type": "string", "description": "The expression to evaluate, e.g. \"2^10 / 4\"."}
                        },
                        "required": ["expression"],
                        "additionalProperties": false
                    }),
                )
                .strict(true)
                .title("Calculator"),
                ToolTraits {
                read_only: true,
                    groups: vec!["math".into()],
                    ..ToolTraits::default()
                },
            ),
        }
    }
}

#[async_trait]
impl Tool for Calculator {
    fn base(&self) -> &ToolBase {
        &self.base
    }

    fn preview(&self, input: &Value, width: usize) -> String {
        let expr = input.get("expression").and_then(Value::as_str).unwrap_or("");
        wield_core::one_line(&format!("calculator: {expr}"), width)
    }

    async fn execute(&self, input: Value, _ctx: &Context) -> ToolResult {
        let expr = input.get("expression").and_then(Value::as_str).unwrap_or("");
        match evaluate(expr) {
            Ok(v) => ToolResult::ok(format_number(v)).with_meta("value", v),
            Err(e) => ToolResult::error(e.to_string()),
        }
    }
}

/// An evaluation error at a 1-based character position.
#[derive(Debug, Clone, PartialEq)]
pub struct CalcError {
    pub position: usize,
    pub message: String,
}

impl std::fmt::Display for CalcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at position {}", self.message, self.position)
    }
}

/// Integers print without a fraction; everything else as Rust prints f64.
pub fn format_number(v: f64) -> String {
    if v == 0.0 {
        return "0".into();
    }
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

pub fn evaluate(expr: &str) -> Result<f64, CalcError> {
    let chars: Vec<char> = expr.chars().collect();
    let mut p = Parser { chars, pos: 0 };
    p.skip_ws();
    if p.at_end() {
        return Err(p.error("empty expression: write something like \"1 + 2\""));
    }
    let v = p.expr()?;
    p.skip_ws();
    if !p.at_end() {
        let c = p.chars[p.pos];
        return Err(p.error(&format!("unexpected `{c}`")));
    }
    if !v.is_finite() {
        return Err(CalcError {
            position: 1,
            message: "the result is not a finite number".into(),
        });
    }
    Ok(v)
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
}

/// Nesting deeper than this is refused rather than risking the stack.
const MAX_DEPTH: usize = 200;

impl Parser {
    fn error(&self, message: &str) -> CalcError {
        CalcError {
            position: self.pos + 1,
            message: message.to_owned(),
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.chars.len()
    }

    fn skip_ws(&mut self) {
        while self.pos < self.chars.len() && self.chars[self.pos].is_whitespace() {
            self.pos += 1;
        }
    }

    fn peek(&mut self) -> Option<char> {
        self.skip_ws();
        self.chars.get(self.pos).copied()
    }

    fn expr(&mut self) -> Result<f64, CalcError> {
        self.expr_at(0)
    }

    fn expr_at(&mut self, depth: usize) -> Result<f64, CalcError> {
        if depth > MAX_DEPTH {
            return Err(self.error("expression nested too deeply"));
        }
        let mut v = self.term(depth)?;
        while let Some(c) = self.peek() {
            match c {
                '+' => {
                    self.pos += 1;
                    v += self.term(depth)?;
                }
                '-' => {
                    self.pos += 1;
                    v -= self.term(depth)?;
                }
                _ => break,
            }
        }
        Ok(v)
    }

    fn term(&mut self, depth: usize) -> Result<f64, CalcError> {
        let mut v = self.unary(depth)?;
        while let Some(c) = self.peek() {
            if !matches!(c, '*' | '/' | '%') {
                break;
            }
            let at = self.pos;
            self.pos += 1;
            let rhs = self.unary(depth)?;
            if c != '*' && rhs == 0.0 {
                return Err(CalcError {
                    position: at + 1,
                    message: if c == '/' { "division by zero" } else { "modulo by zero" }.into(),
                });
            }
            v = match c {
                '*' => v * rhs,
                '/' => v / rhs,
                _ => v % rhs,
            };
        }
        Ok(v)
    }

    // Signs (`---1`) and powers (`2^2^2`) recurse too: each level counts.
    fn unary(&mut self, depth: usize) -> Result<f64, CalcError> {
        if depth > MAX_DEPTH {
            return Err(self.error("expression nested too deeply"));
        }
        match self.peek() {
            Some('-') => {
                self.pos += 1;
                Ok(-self.unary(depth + 1)?)
            }
            Some('+') => {
                self.pos += 1;
                self.unary(depth + 1)
            }
            _ => self.power(depth),
        }
    }

    fn power(&mut self, depth: usize) -> Result<f64, CalcError> {
        let base = self.atom(depth)?;
        if self.peek() == Some('^') {
            self.pos += 1;
            // Right-associative, and binds tighter than unary minus on its
            // left: -2^2 is -4, 2^-1 is 0.5.
            let exp = self.unary(depth + 1)?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }

    fn atom(&mut self, depth: usize) -> Result<f64, CalcError> {
        let Some(c) = self.peek() else {
            return Err(self.error("unexpected end of expression: a number, `(` or a function was expected"));
        };
        if c == '(' {
            self.pos += 1;
            let v = self.expr_at(depth + 1)?;
            if self.peek() != Some(')') {
                return Err(self.error("expected `)`"));
            }
            self.pos += 1;
            return Ok(v);
        }
        if c.is_ascii_digit() || c == '.' {
            return self.number();
        }
        if c.is_alphabetic() {
            return self.name(depth);
        }
        Err(self.error(&format!("unexpected `{c}`")))
    }

    fn number(&mut self) -> Result<f64, CalcError> {
        let start = self.pos;
        while self.pos < self.chars.len() && (self.chars[self.pos].is_ascii_digit() || self.chars[self.pos] == '.') {
            self.pos += 1;
        }
        if self.pos < self.chars.len() && matches!(self.chars[self.pos], 'e' | 'E') {
            let save = self.pos;
            self.pos += 1;
            if self.pos < self.chars.len() && matches!(self.chars[self.pos], '+' | '-') {
                self.pos += 1;
            }
            let digits = self.pos;
            while self.pos < self.chars.len() && self.chars[self.pos].is_ascii_digit() {
                self.pos += 1;
            }
            if self.pos == digits {
                self.pos = save;
            }
        }
        let text: String = self.chars[start..self.pos].iter().collect();
        text.parse::<f64>().map_err(|_| CalcError {
            position: start + 1,
            message: format!("invalid number `{text}`"),
        })
    }

    fn name(&mut self, depth: usize) -> Result<f64, CalcError> {
        let start = self.pos;
        while self.pos < self.chars.len() && (self.chars[self.pos].is_alphanumeric() || self.chars[self.pos] == '_') {
            self.pos += 1;
        }
        let name: String = self.chars[start..self.pos].iter().collect::<String>().to_lowercase();
        match name.as_str() {
            "pi" => return Ok(std::f64::consts::PI),
            "e" => return Ok(std::f64::consts::E),
            _ => {}
        }
        let unknown = || CalcError {
            position: start + 1,
            message: format!(
                "unknown name `{name}`: use sqrt, abs, floor, ceil, round, min, max, ln, log, sin, cos, tan, pi or e"
            ),
        };
        let known = [
            "sqrt", "abs", "floor", "ceil", "round", "min", "max", "ln", "log", "sin", "cos", "tan",
        ];
        if !known.contains(&name.as_str()) {
            return Err(unknown());
        }
        if self.peek() != Some('(') {
            return Err(self.error(&format!("expected `(` after function `{name}`")));
        }
        self.pos += 1;
        let mut args = vec![self.expr_at(depth + 1)?];
        while self.peek() == Some(',') {
            self.pos += 1;
            args.push(self.expr_at(depth + 1)?);
        }
        if self.peek() != Some(')') {
            return Err(self.error("expected `)` or `,`"));
        }
        self.pos += 1;
        let one = |f: fn(f64) -> f64| -> Result<f64, CalcError> {
            if args.len() != 1 {
                return Err(CalcError {
                    position: start + 1,
                    message: format!("`{name}` takes exactly one argument, got {}", args.len()),
                });
            }
            Ok(f(args[0]))
        };
        let domain = |ok: bool, what: &str| -> Result<(), CalcError> {
            if ok {
                Ok(())
            } else {
                Err(CalcError {
                    position: start + 1,
                    message: format!("`{name}` {what}"),
                })
            }
        };
        match name.as_str() {
            "sqrt" => {
                domain(args.first().is_some_and(|a| *a >= 0.0), "of a negative number")?;
                one(f64::sqrt)
            }
            "ln" | "log" => {
                domain(args.first().is_some_and(|a| *a > 0.0), "needs a positive argument")?;
                one(if name == "ln" { f64::ln } else { f64::log10 })
            }
            "abs" => one(f64::abs),
            "floor" => one(f64::floor),
            "ceil" => one(f64::ceil),
            "round" => one(f64::round),
            "sin" => one(f64::sin),
            "cos" => one(f64::cos),
            "tan" => one(f64::tan),
            "min" => Ok(args.iter().copied().fold(f64::INFINITY, f64::min)),
            "max" => Ok(args.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            _ => Err(unknown()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic() {
        assert_eq!(evaluate("(1+2)*3").unwrap(), 9.0);
        assert_eq!(evaluate("2^10").unwrap(), 1024.0);
        assert_eq!(evaluate("2^3^2").unwrap(), 512.0);
        assert_eq!(evaluate("-2^2").unwrap(), -4.0);
        assert_eq!(evaluate("2^-1").unwrap(), 0.5);
        assert_eq!(evaluate("7 % 4").unwrap(), 3.0);
        assert_eq!(evaluate("--3").unwrap(), 3.0);
        assert_eq!(evaluate("1.5e3").unwrap(), 1500.0);
    }

    #[test]
    fn functions_and_constants() {
        assert_eq!(evaluate("sqrt(16) + abs(-2)").unwrap(), 6.0);
        assert_eq!(evaluate("max(1, 5, 3) - min(4, 2)").unwrap(), 3.0);
        assert_eq!(evaluate("floor(2.7)+ceil(2.1)+round(2.5)").unwrap(), 8.0);
        assert!((evaluate("ln(e)").unwrap() - 1.0).abs() < 1e-12);
        assert!((evaluate("log(1000)").unwrap() - 3.0).abs() < 1e-12);
        assert!(evaluate("sin(pi)").unwrap().abs() < 1e-12);
        assert!((evaluate("cos(0) + tan(0)").unwrap() - 1.0).abs() < 1e-12);
    }

    #[test]
    fn errors_name_positions() {
        let e = evaluate("1/0").unwrap_err();
        assert_eq!((e.position, e.message.as_str()), (2, "division by zero"));
        let e = evaluate("1 + * 2").unwrap_err();
        assert_eq!(e.position, 5);
        let e = evaluate("(1+2").unwrap_err();
        assert!(e.message.contains("`)`"));
        let e = evaluate("foo(1)").unwrap_err();
        assert!(e.message.contains("unknown name `foo`"));
        assert!(evaluate("").is_err());
        assert!(evaluate("sqrt(-1)").is_err());
        assert!(evaluate(&"(".repeat(10_000)).is_err());
        // Chains of signs and powers recurse as deeply as parentheses: an
        // error, not a stack overflow that aborts the process.
        for deep in [
            format!("{}1", "-".repeat(100_000)),
            format!("{}1", "+".repeat(100_000)),
            format!("{}2", "2^".repeat(100_000)),
            format!("{}1", "-(".repeat(50_000)),
        ] {
            let e = evaluate(&deep).unwrap_err();
            assert!(e.message.contains("nested too deeply"), "{e:?}");
        }
        assert_eq!(evaluate(&format!("{}1", "-".repeat(100))).unwrap(), 1.0);
    }

    #[test]
    fn formatting() {
        assert_eq!(format_number(9.0), "9");
        assert_eq!(format_number(0.5), "0.5");
        assert_eq!(format_number(-0.0), "0");
    }
}
