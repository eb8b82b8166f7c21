// The Lua side of the sandbox, run in every fresh state before the script.
// It receives the host function table H (kept in a local the script cannot reach:
// there is no debug library), locks down the globals and builds the modules.
// Returns the driver that runs the compiled script and hands its results to the host.
export const PRELUDE = String.raw`
local H, mode, MAX_STR = ...
local type, error, select, rawget, rawset, setmetatable, tostring, next =
      type, error, select, rawget, rawset, setmetatable, tostring, next
local lower, concat = string.lower, table.concat
local co_create, co_resume, co_yield, co_status, co_running, co_isyieldable, co_close =
      coroutine.create, coroutine.resume, coroutine.yield, coroutine.status,
      coroutine.running, coroutine.isyieldable, coroutine.close

-- No compiler, files or process: only base, string, table, math, utf8, coroutine were opened.
load, loadfile, dofile, loadstring, require, module = nil, nil, nil, nil, nil, nil
string.dump = nil

-- A timeout or memory kill is final: a pcall that caught it raises it again.
local killed = H.killed
local function recheck(ok, ...)
  if not ok then
    local k = killed()
    if k then error(k, 0) end
  end
  return ok, ...
end
local _pcall = pcall
function pcall(...) return recheck(_pcall(...)) end
-- Lua calls a message handler before unwinding, so for an error raised by the deadline
-- hook it would run inside the hook, where hooks are off: a looping handler would never
-- be stopped. xpcall is therefore pcall, then the handler as ordinary code once the stack
-- has unwound (without the debug library a handler cannot tell the difference).
local function xfinish(h, ok, ...)
  if ok then return true, ... end
  local k = killed()
  if k then error(k, 0) end
  local _, r = recheck(_pcall(h, (...)))
  return false, r
end
function xpcall(f, h, ...)
  if type(h) ~= 'function' then error("bad argument #2 to 'xpcall' (function expected)", 2) end
  return xfinish(h, _pcall(f, ...))
end

-- Lua runs __gc metamethods with hooks switched off, so a looping finalizer would be
-- beyond the deadline. An object is only ever finalized if its metatable has __gc
-- (any non-nil value) when setmetatable is called, so refusing that here is enough,
-- provided no metatable the host sets (arrays from json.decode) is within the script's
-- reach: json.array_mt is a token, never a real metatable (see the modules below).
-- (_G.: the names are also locals of this chunk.)
local getmetatable, rawequal = getmetatable, rawequal
local array_mt = { __name = 'json.array' }
local array_token = {}
_G.setmetatable = function(t, mt)
  if rawequal(mt, array_token) then mt = array_mt
  elseif type(mt) == 'table' and rawget(mt, '__gc') ~= nil then error('__gc metamethods are not allowed', 2) end
  return setmetatable(t, mt)
end
_G.getmetatable = function(v)
  local mt = getmetatable(v)
  if rawequal(mt, array_mt) then return array_token end
  return mt
end

-- Async host calls (kv, http, credentials) yield the whole script to the host with
-- (MARK, ticket); the host awaits the promise and resumes; H.take returns the answer.
-- A user coroutine that makes such a call forwards the yield outwards.
local MARK = {}
local function await(id, err)
  if id == nil then return nil, err end
  co_yield(MARK, id)
  return H.take(id)
end
local function forward(co, ok, ...)
  if ok and select('#', ...) == 2 and (...) == MARK and co_status(co) == 'suspended' then
    co_yield(MARK, (select(2, ...)))
    return forward(co, co_resume(co))
  end
  return recheck(ok, ...)
end
local function resume(co, ...) return forward(co, co_resume(co, ...)) end
coroutine.resume = resume
function coroutine.wrap(f)
  local co = co_create(f)
  local function pass(ok, ...)
    if ok then return ... end
    error((...), 0)
  end
  return function(...) return pass(resume(co, ...)) end
end
-- A coroutine stopped by the deadline hook keeps its hooks off (lua_resume does not restore
-- them), so its pending __close handlers must never run: after a kill, close refuses.
function coroutine.close(co)
  local k = killed()
  if k then error(k, 0) end
  return recheck(co_close(co))
end
function coroutine.isyieldable(co)
  if co == nil and select(2, co_running()) then return false end
  return co_isyieldable(co)
end

-- Bounded allocations from a single C call; the memory cap covers the rest.
-- Large results are built by the host: the WASM build's memcpy costs ~30 ns a call and
-- the C loop makes one per piece (30 ms for rep('x', 1e6)); the host copies by doubling.
local s_rep, tointeger, h_rep = string.rep, math.tointeger, H.rep
function string.rep(s, n, sep)
  local ts, tsep = type(s), type(sep)
  if type(n) == 'number' and n > 1 and (ts == 'string' or ts == 'number')
     and (sep == nil or tsep == 'string' or tsep == 'number') then
    local size = #tostring(s) * n
    if sep ~= nil then size = size + #tostring(sep) * (n - 1) end
    if size > MAX_STR then error('string.rep: result too large (limit ' .. MAX_STR .. ' bytes)', 2) end
    local k = tointeger(n)
    if k and k > 16 then return h_rep(s, k, sep) end
  end
  return s_rep(s, n, sep)
end
local gc = collectgarbage
function collectgarbage(opt, ...)
  if opt == nil or opt == 'collect' or opt == 'count' or opt == 'step' then return gc(opt, ...) end
  error("collectgarbage('" .. tostring(opt) .. "') is not allowed", 2)
end

-- Modules.
local null = setmetatable({}, {
  __tostring = function() return 'null' end,
  __newindex = function() error('json.null is read-only', 2) end,
  __metatable = 'json.null',
})
H.register(null, array_mt)
json = { encode = H.json_encode, decode = H.json_decode, null = null, array_mt = array_token }
function json.array(t) return setmetatable(t or {}, array_mt) end
base64 = { encode = H.base64_encode, decode = H.base64_decode }
crypto = {
  sha256 = H.sha256,
  hmac_sha256 = H.hmac_sha256,
  decrypt_credential = function(name) return await(H.credential(name)) end,
}
local function logger(level)
  return function(msg, fields) H.log(level, tostring(msg), fields) end
end
log = { info = logger('info'), warn = logger('warn'), error = logger('error') }
function print(...)
  local parts = {}
  for i = 1, select('#', ...) do parts[i] = tostring((select(i, ...))) end
  H.log('info', concat(parts, '\t'))
end
kv = {
  get = function(key) return await(H.kv_get(key)) end,
  set = function(key, value, ttl) return await(H.kv_set(key, value, ttl)) end,
  del = function(key) return await(H.kv_del(key)) end,
}
http = {
  get = function(url, opts) return await(H.http('GET', url, nil, opts)) end,
  post = function(url, body, opts) return await(H.http('POST', url, body, opts)) end,
  put = function(url, body, opts) return await(H.http('PUT', url, body, opts)) end,
  delete = function(url, opts) return await(H.http('DELETE', url, nil, opts)) end,
}

-- The request: headers are case-insensitive (stored lower-case); payload is the
-- original body decoded on first use, so scripts that never touch it pay nothing.
local input = H.input()
local function headers_of(t)
  return setmetatable(t, {
    __index = function(h, k) if type(k) == 'string' then return rawget(h, lower(k)) end end,
    __newindex = function(h, k, v) if type(k) == 'string' then k = lower(k) end rawset(h, k, v) end,
  })
end
local req = input.request
req.headers = headers_of(req.headers or {})
local original_body, decoded = req.body, false
setmetatable(req, { __index = function(t, k)
  if k == 'payload' and not decoded then
    decoded = true
    local p = json.decode(original_body)
    rawset(t, 'payload', p)
    return p
  end
end })
request = req
if input.webhook then
  local info = input.webhook
  webhook = setmetatable({}, {
    __index = info,
    __newindex = function() error('webhook is read-only', 2) end,
    __pairs = function() return next, info, nil end,
    __metatable = false,
  })
end
if mode == 'transform' then howk = { post = H.emit } end

return function(main)
  main()
  if mode == 'delivery' then
    local r = rawget(_G, 'request')
    if type(r) ~= 'table' then error('request must remain a table', 0) end
    local body = rawget(r, 'body')
    local changed = body ~= original_body
    H.finish(changed, changed and body or nil, rawget(r, 'headers'), rawget(r, 'retry_on_status'),
             (not changed) and rawget(r, 'payload') or nil)
  end
end
`;
