/** The Redis twin of gcra.ts, loaded with defineCommand. Kept as a string so dist/ needs no copied assets. */
export const GCRA_LUA = `
-- Folio admission: fence check + multi-window GCRA, atomically.
-- The twin of gcra.ts; keep them in step. Time in whole microseconds.
-- KEYS[1]   fence key ("" when no fence is used)
-- KEYS[2..] one TAT key per limit
-- ARGV[1]   expected fence generation ("" when no fence)
-- ARGV[2i], ARGV[2i+1]  count and period (ms) of limit i
-- Returns {-1, generation} when the fence moved, else
-- {allowed, retry_after_ms, remaining_1, reset_ms_1, remaining_2, reset_ms_2, ...}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

if ARGV[1] ~= '' then
  local g = redis.call('GET', KEYS[1]) or '0'
  if g ~= ARGV[1] then return {-1, tonumber(g)} end
end

local n = #KEYS - 1
local allowed = 1
local retry = 0
local current = {}
local new_tats = {}
local intervals = {}
local periods = {}
for i = 1, n do
  local count = tonumber(ARGV[2 * i])
  local period = tonumber(ARGV[2 * i + 1]) * 1000
  local interval = math.floor(period / count)
  if interval < 1 then interval = 1 end
  local tat = tonumber(redis.call('GET', KEYS[i + 1]) or now)
  if tat < now then tat = now end
  current[i] = tat
  new_tats[i] = tat + interval
  intervals[i] = interval
  periods[i] = period
  local over = new_tats[i] - now - period
  if over > 0 then
    allowed = 0
    if over > retry then retry = over end
  end
end

local result = {allowed, math.ceil(retry / 1000)}
for i = 1, n do
  local ahead = current[i] - now
  if allowed == 1 then
    ahead = new_tats[i] - now
    redis.call('SET', KEYS[i + 1], string.format('%d', new_tats[i]), 'PX', math.ceil(ahead / 1000) + 1000)
  end
  local remaining = math.floor((periods[i] - ahead) / intervals[i])
  if remaining < 0 then remaining = 0 end
  result[#result + 1] = remaining
  result[#result + 1] = math.ceil(ahead / 1000)
end
return result
`;
