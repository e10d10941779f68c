-- name: StartVoiceCall :one
-- StartVoiceCall records a call once: a retried webhook of the same CallSid finds its row.
INSERT INTO voice_calls (workspace_id, channel_id, call_sid, direction, remote, local, agent_id, conversation_id, campaign_send_id)
VALUES (@workspace_id, @channel_id, @call_sid, @direction, @remote, @local, sqlc.narg(agent_id), sqlc.narg(conversation_id),
    sqlc.narg(campaign_send_id))
ON CONFLICT (channel_id, call_sid) DO UPDATE SET call_sid = EXCLUDED.call_sid
RETURNING *;

-- name: VoiceCallBySID :one
SELECT * FROM voice_calls WHERE workspace_id = @workspace_id AND channel_id = @channel_id AND call_sid = @call_sid;

-- name: SetVoiceCallConversation :exec
UPDATE voice_calls SET conversation_id = @conversation_id WHERE workspace_id = @workspace_id AND id = @id;

-- name: SetVoiceCallOutcome :exec
-- SetVoiceCallOutcome says what the flow did (after_hours, transferred, ...); the first one
-- set stays, except that a voicemail follows a transfer nobody answered.
UPDATE voice_calls SET outcome = @outcome
WHERE workspace_id = @workspace_id AND id = @id AND (outcome IS NULL OR @outcome = 'voicemail');

-- name: SetSilentGathers :one
UPDATE voice_calls SET silent_gathers = CASE WHEN @silent::boolean THEN silent_gathers + 1 ELSE 0 END
WHERE workspace_id = @workspace_id AND id = @id
RETURNING silent_gathers;

-- name: SetVoicemail :exec
UPDATE voice_calls SET voicemail_url = @voicemail_url, voicemail_s = @voicemail_s, outcome = 'voicemail'
WHERE workspace_id = @workspace_id AND id = @id;

-- name: EndVoiceCall :one
-- EndVoiceCall applies the call's final status once: a repeated status callback changes
-- nothing (no row returned), so a call is metered exactly once.
UPDATE voice_calls SET ended_at = now(), carrier_status = @carrier_status, duration_s = @duration_s, minutes = @minutes
WHERE workspace_id = @workspace_id AND id = @id AND ended_at IS NULL
RETURNING *;

-- name: StartVoiceTurn :one
-- StartVoiceTurn writes what the caller said as turn seq, once: false when the turn was
-- there already (a retried gather), whose answer is then picked up, not asked again.
INSERT INTO voice_turns (call_id, seq, workspace_id, speech) VALUES (@call_id, @seq, @workspace_id, @speech)
ON CONFLICT (call_id, seq) DO NOTHING
RETURNING true;

-- name: VoiceTurn :one
SELECT * FROM voice_turns WHERE workspace_id = @workspace_id AND call_id = @call_id AND seq = @seq;

-- name: FinishVoiceTurn :exec
UPDATE voice_turns SET status = @status, reply = sqlc.narg(reply), action = sqlc.narg(action), answered_at = now()
WHERE workspace_id = @workspace_id AND call_id = @call_id AND seq = @seq AND status = 'pending';

-- name: CloseCallConversation :exec
UPDATE conversations SET status = 'closed', updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: VoiceCallOfConversation :one
-- VoiceCallOfConversation is the call that carried a conversation (its transcript shows how it went).
SELECT * FROM voice_calls WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id
ORDER BY started_at DESC LIMIT 1;
