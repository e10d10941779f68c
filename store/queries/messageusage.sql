-- name: MessagesWithUsage :many
-- MessagesWithUsage is a conversation's messages, each assistant reply with the model,
-- tokens and cost of the turn that produced it. Nothing links a ledger row to a message, but a
-- turn writes its messages and its charge in one transaction, where now() (both tables'
-- created_at default) is the same instant: the turn's reply is the last assistant message of
-- that instant. When two charges of the conversation share an instant (a batch holding two of
-- its turns) nothing is attributed rather than guessed.
WITH charges AS (
    SELECT created_at, min(model)::text AS model, min(input_tokens)::bigint AS input_tokens,
           min(output_tokens)::bigint AS output_tokens, min(-amount_nano_usd)::bigint AS cost_nano_usd
    FROM ledger
    WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND category = 'model_usage'
    GROUP BY created_at HAVING count(*) = 1
), replies AS (
    SELECT created_at, max(seq) AS seq
    FROM messages
    WHERE workspace_id = @workspace_id AND conversation_id = @conversation_id AND role = 'assistant'
    GROUP BY created_at
)
SELECT m.seq, m.role, m.content, m.tool_calls, m.tool_results, m.created_at,
       ch.model, ch.input_tokens, ch.output_tokens, ch.cost_nano_usd
FROM messages m
LEFT JOIN replies r ON r.seq = m.seq
LEFT JOIN charges ch ON ch.created_at = r.created_at
WHERE m.workspace_id = @workspace_id AND m.conversation_id = @conversation_id
ORDER BY m.seq;
