-- name: PauseWorkspaceCampaigns :many
-- PauseWorkspaceCampaigns pauses every scheduled and running campaign of a workspace (it is
-- suspended) with reason.
-- The campaigns are locked in id order first, as a batch of delivery reports locks them.
WITH locked AS (
    SELECT k.id FROM campaigns k WHERE k.workspace_id = @workspace_id AND k.status IN ('scheduled', 'running')
    ORDER BY k.id
    FOR NO KEY UPDATE
)
UPDATE campaigns c SET status = 'paused', paused_reason = @reason::text, updated_at = now()
FROM locked WHERE c.id = locked.id AND c.status IN ('scheduled', 'running')
RETURNING c.id;

-- name: CampaignSendConversation :one
-- CampaignSendConversation is the conversation a send opened, for its charge.
SELECT cv.id, cv.short_id FROM campaign_sends s JOIN conversations cv ON cv.id = s.conversation_id
WHERE s.workspace_id = @workspace_id AND s.id = @id;
