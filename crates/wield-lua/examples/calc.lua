-- Flemma's calculator: a recursive-descent evaluator of + - * / % ^ and
-- parentheses over numbers; nothing else is evaluated.
local function evaluate(src)
  local pos = 1
  local function skip() pos = src:find("%S", pos) or #src + 1 end
  local function peek() skip() return src:sub(pos, pos) end
  local expr
  local function atom()
    local c = peek()
    if c == "(" then
      pos = pos + 1
      local v = expr()
      if peek() ~= ")" then error("expected ) at " .. pos, 0) end
      pos = pos + 1
      return v
    elseif c == "-" then
      pos = pos + 1
      return -atom()
    end
    local num = src:match("^%d+%.?%d*", pos)
    if not num then error("unexpected " .. (c == "" and "end" or "'" .. c .. "'") .. " at " .. pos, 0) end
    pos = pos + #num
    return tonumber(num)
  end
  local function power()
    local b = atom()
    if peek() == "^" then pos = pos + 1; return b ^ power() end
    return b
  end
  local function term()
    local v = power()
    while true do
      local c = peek()
      if c == "*" then pos = pos + 1; v = v * power()
      elseif c == "/" then pos = pos + 1
        local d = power()
        if d == 0 then error("division by zero", 0) end
        v = v / d
      elseif c == "%" then pos = pos + 1; v = v % power()
      else return v end
    end
  end
  expr = function()
    local v = term()
    while true do
      local c = peek()
      if c == "+" then pos = pos + 1; v = v + term()
      elseif c == "-" then pos = pos + 1; v = v - term()
      else return v end
    end
  end
  local v = expr()
  if peek() ~= "" then error("unexpected '" .. peek() .. "' at " .. pos, 0) end
  return v
end

return {
  name = "calc",
  description = "Evaluate an arithmetic expression (+ - * / ^ %, parentheses)",
  input_schema = {
    type = "object",
    properties = { expression = { type = "string", description = "e.g. (2 + 3) * 4" } },
    required = { "expression" },
    additionalProperties = false,
  },
  strict = true,
  read_only = true,
  format_preview = function(input, width) return "calc: " .. input.expression end,
  execute = function(input)
    local ok, v = pcall(evaluate, input.expression)
    if not ok then return { success = false, error = tostring(v) } end
    if v == math.floor(v) and math.abs(v) < 2^53 then v = math.tointeger(v) end
    return { success = true, output = tostring(v) }
  end,
}
