-- name: PauseWorkspaceCampaigns :many
-- PauseWorkspaceCampaigns pauses every scheduled and running campaign of a workspace (it is
-- suspended) with reason.
UPDATE campaigns SET status = 'paused', paused_reason = @reason::text, updated_at = now()
WHERE workspace_id = @workspace_id AND status IN ('scheduled', 'running')
RETURNING id;

-- name: CampaignSendConversation :one
-- CampaignSendConversation is the conversation a send opened, for its charge.
SELECT cv.id, cv.short_id FROM campaign_sends s JOIN conversations cv ON cv.id = s.conversation_id
WHERE s.workspace_id = @workspace_id AND s.id = @id;
