return {
  name = "word_count",
  description = "Count words in a workspace file",
  input_schema = { type = "object", properties = { path = { type = "string" } }, required = { "path" } },
  format_preview = function(input, width) return input.path end,
  execute = function(input, ctx)
    local text, err = ctx.fs.read(input.path)
    if not text then return { success = false, error = err } end
    local n = 0; for _ in text:gmatch("%S+") do n = n + 1 end
    return { success = true, output = tostring(n) }
  end,
}
