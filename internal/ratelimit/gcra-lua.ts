/** The Redis twin of gcra.ts, loaded with defineCommand. Kept as a string so dist/ needs no copied assets. */
export const GCRA_LUA = `
-- Folio admission: fence check + multi-window GCRA, atomically.
-- The twin of gcra.ts; keep them in step.
-- KEYS[1]   fence key ("" when no fence is used)
-- KEYS[2..] one TAT key per limit
-- ARGV[1]   expected fence generation ("" when no fence)
-- ARGV[2i], ARGV[2i+1]  count and period (ms) of limit i
-- Returns {-1, generation} when the fence moved, else
-- {allowed, retry_after_ms, remaining_1, reset_ms_1, remaining_2, reset_ms_2, ...}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

if ARGV[1] ~= '' then
  local g = redis.call('GET', KEYS[1]) or '0'
  if g ~= ARGV[1] then return {-1, tonumber(g)} end
end

local n = #KEYS - 1
local allowed = 1
local retry = 0
local new_tats = {}
local out = {}
for i = 1, n do
  local count = tonumber(ARGV[2 * i])
  local period = tonumber(ARGV[2 * i + 1])
  local interval = period / count
  local tat = tonumber(redis.call('GET', KEYS[i + 1]) or now)
  if tat < now then tat = now end
  local new_tat = tat + interval
  local over = new_tat - now - period
  local ahead = new_tat - now
  if over > 0 then
    allowed = 0
    if over > retry then retry = over end
    ahead = tat - now
  end
  new_tats[i] = new_tat
  local remaining = math.floor((period - ahead) / interval)
  if remaining < 0 then remaining = 0 end
  out[#out + 1] = remaining
  out[#out + 1] = math.ceil(ahead)
end

if allowed == 1 then
  for i = 1, n do
    local ttl = math.ceil(new_tats[i] - now) + 1000
    redis.call('SET', KEYS[i + 1], string.format('%.3f', new_tats[i]), 'PX', ttl)
  end
end

local result = {allowed, math.ceil(retry)}
for i = 1, #out do result[#result + 1] = out[i] end
return result
`;
