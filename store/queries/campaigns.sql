-- name: InsertCampaign :one
INSERT INTO campaigns (workspace_id, name, status, agent_id, deployment_id, audience, first_message,
    start_at, window_start, window_end, timezone, rate_per_minute, template, voicemail_recording_id)
VALUES (@workspace_id, @name, @status, sqlc.narg(agent_id), sqlc.narg(deployment_id), @audience, sqlc.narg(first_message),
    sqlc.narg(start_at), sqlc.narg(window_start), sqlc.narg(window_end), sqlc.narg(timezone), @rate_per_minute, sqlc.narg(template),
    sqlc.narg(voicemail_recording_id))
RETURNING *;

-- name: CampaignByID :one
SELECT * FROM campaigns WHERE workspace_id = @workspace_id AND id = @id;

-- name: LockCampaign :one
SELECT * FROM campaigns WHERE workspace_id = @workspace_id AND id = @id FOR UPDATE;

-- name: ListCampaigns :many
SELECT * FROM campaigns
WHERE workspace_id = @workspace_id AND (sqlc.narg(status)::text IS NULL OR status = sqlc.narg(status)::text)
  AND (sqlc.narg(agent_id)::uuid IS NULL OR agent_id = sqlc.narg(agent_id)::uuid)
ORDER BY created_at DESC, id DESC;

-- name: UpdateCampaign :one
UPDATE campaigns SET name = @name, agent_id = sqlc.narg(agent_id), deployment_id = sqlc.narg(deployment_id),
    audience = @audience, first_message = sqlc.narg(first_message), start_at = sqlc.narg(start_at),
    window_start = sqlc.narg(window_start), window_end = sqlc.narg(window_end), timezone = sqlc.narg(timezone),
    rate_per_minute = @rate_per_minute, template = sqlc.narg(template),
    voicemail_recording_id = sqlc.narg(voicemail_recording_id), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: SetCampaignStatus :one
-- SetCampaignStatus moves a campaign to status, stamping the matching time once.
UPDATE campaigns SET status = @status, paused_reason = sqlc.narg(paused_reason),
    started_at = CASE WHEN @status IN ('scheduled', 'running') THEN coalesce(started_at, now()) ELSE started_at END,
    completed_at = CASE WHEN @status = 'completed' THEN now() ELSE completed_at END,
    cancelled_at = CASE WHEN @status = 'cancelled' THEN now() ELSE cancelled_at END,
    updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id
RETURNING *;

-- name: PauseAgentCampaigns :many
-- PauseAgentCampaigns pauses the scheduled and running campaigns of an agent being disabled.
-- The campaigns are locked in id order first, as a batch of delivery reports locks them.
WITH locked AS (
    SELECT k.id FROM campaigns k WHERE k.workspace_id = @workspace_id AND k.agent_id = @agent_id AND k.status IN ('scheduled', 'running')
    ORDER BY k.id
    FOR NO KEY UPDATE
)
UPDATE campaigns c SET status = 'paused', paused_reason = 'agent_disabled', updated_at = now()
FROM locked WHERE c.id = locked.id AND c.status IN ('scheduled', 'running')
RETURNING c.id;

-- name: CampaignAudienceNext :many
-- CampaignAudienceNext is the next contacts of the campaign's audience without a send row,
-- oldest first: deleted and non-consenting ones too, so the caller records them as skipped.
-- The deferred ones (a voice campaign's contacts outside their local window) are left out.
SELECT c.id, c.phone, c.name, c.consent_sms, c.consent_calls, c.timezone, c.deleted_at FROM contacts c
WHERE c.workspace_id = @workspace_id
  AND (c.id = ANY (@contact_ids::uuid[]) OR c.tags && @tags::text[]
       OR EXISTS (SELECT 1 FROM contact_list_members m
                  WHERE m.workspace_id = c.workspace_id AND m.contact_id = c.id AND m.list_id = ANY (@list_ids::uuid[])))
  AND NOT EXISTS (SELECT 1 FROM campaign_sends s WHERE s.campaign_id = @campaign_id AND s.contact_id = c.id)
  AND NOT (c.id = ANY (@deferred::uuid[]))
ORDER BY c.created_at, c.id
LIMIT @max_rows;

-- name: ClaimCampaignSend :one
-- ClaimCampaignSend records the decision about one contact; no row comes back when another
-- worker (or an earlier run) already decided about it.
INSERT INTO campaign_sends (workspace_id, campaign_id, contact_id, status, reason, conversation_id)
VALUES (@workspace_id, @campaign_id, @contact_id, @status, sqlc.narg(reason), sqlc.narg(conversation_id))
ON CONFLICT (campaign_id, contact_id) DO NOTHING
RETURNING id;

-- name: FinishCampaignSend :exec
UPDATE campaign_sends SET status = @status, reason = sqlc.narg(reason),
    provider_message_id = sqlc.narg(provider_message_id), updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: CountCampaignSend :exec
UPDATE campaigns SET sent_count = sent_count + @sent::int, failed_count = failed_count + @failed::int,
    skipped_count = skipped_count + @skipped::int, updated_at = now()
WHERE workspace_id = @workspace_id AND id = @id;

-- name: CampaignSends :many
SELECT * FROM campaign_sends WHERE workspace_id = @workspace_id AND campaign_id = @campaign_id
ORDER BY created_at, id;

-- name: ActiveCampaigns :many
-- ActiveCampaigns lists the scheduled and running campaigns of every workspace, for the
-- periodic job that makes sure each has a tick queued.
SELECT workspace_id, id FROM campaigns WHERE status IN ('scheduled', 'running');

-- name: CampaignDeployment :one
SELECT agent_id, channel_type, channel_id FROM deployments WHERE workspace_id = @workspace_id AND id = @id;

-- name: CampaignSendsInFlight :one
-- CampaignSendsInFlight counts the sends of a campaign decided but not yet answered by the
-- provider, recently enough that they are still in flight (an older one is a crash's).
SELECT count(*) FROM campaign_sends
WHERE workspace_id = @workspace_id AND campaign_id = @campaign_id AND status = 'sending'
  AND updated_at > now() - make_interval(secs => @within_seconds::float8);

-- name: CampaignCallOf :one
-- CampaignCallOf is what the call flow needs of the campaign send an outbound call was placed
-- for: its campaign, contact and conversation.
SELECT s.id, s.campaign_id, s.contact_id, s.conversation_id, c.agent_id, c.voicemail_recording_id, c.first_message,
    ct.phone
FROM campaign_sends s JOIN campaigns c ON c.id = s.campaign_id JOIN contacts ct ON ct.id = s.contact_id
WHERE s.workspace_id = @workspace_id AND s.id = @id;

-- name: ApplyCallStatus :exec
-- ApplyCallStatus applies a campaign call's final carrier status to its send and campaign, once:
-- completed is delivered, busy, no-answer, failed and canceled are undelivered. The campaign's
-- row is locked before the send's (the locking CTE is read by the send's UPDATE before it
-- updates), the order in which recording a send's answer takes them (campaigns/send.go):
-- a call ending while its placing is recorded would otherwise deadlock with it.
WITH campaign AS (
    SELECT c.id FROM campaigns c JOIN campaign_sends s ON s.campaign_id = c.id
    WHERE s.workspace_id = @workspace_id::uuid AND s.id = @id::uuid
    FOR NO KEY UPDATE OF c
), sent AS (
    UPDATE campaign_sends cs SET call_status = @call_status::text, delivery = @delivery::text, updated_at = now()
    FROM campaign
    WHERE cs.workspace_id = @workspace_id::uuid AND cs.id = @id::uuid AND cs.campaign_id = campaign.id AND cs.call_status IS NULL
    RETURNING cs.campaign_id
)
UPDATE campaigns c SET delivered_count = c.delivered_count + (@delivery::text = 'delivered')::int,
    undelivered_count = c.undelivered_count + (@delivery::text = 'undelivered')::int, updated_at = now()
FROM sent WHERE c.workspace_id = @workspace_id::uuid AND c.id = sent.campaign_id;

-- name: ApplyAnsweredBy :execrows
-- ApplyAnsweredBy keeps answering-machine detection's verdict on a campaign call, once, and
-- counts the call as answered by a person or by a machine (a voicemail is left). The campaign's
-- row is locked first, as in ApplyCallStatus.
WITH campaign AS (
    SELECT c.id FROM campaigns c JOIN campaign_sends s ON s.campaign_id = c.id
    WHERE s.workspace_id = @workspace_id::uuid AND s.id = @id::uuid
    FOR NO KEY UPDATE OF c
), sent AS (
    UPDATE campaign_sends cs SET answered_by = @answered_by::text, updated_at = now()
    FROM campaign
    WHERE cs.workspace_id = @workspace_id::uuid AND cs.id = @id::uuid AND cs.campaign_id = campaign.id AND cs.answered_by IS NULL
    RETURNING cs.campaign_id
)
UPDATE campaigns c SET answered_count = c.answered_count + (NOT sqlc.arg(machine)::bool)::int,
    voicemail_count = c.voicemail_count + (@machine::bool)::int, updated_at = now()
FROM sent WHERE c.workspace_id = @workspace_id::uuid AND c.id = sent.campaign_id;
