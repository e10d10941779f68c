package manage

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/uuid"
)

// The describe functions check a risky call's arguments before it is parked and say what it
// will do, in words the user confirms with `YES <code>`. They name the agent, so the user
// confirms the deletion of "Dental front desk", not of an id.

func (s *Service) describeUpdate(ctx context.Context, ws uuid.UUID, in UpdateAgentInput) (string, error) {
	a, _, err := s.planUpdate(ctx, ws, in)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Update agent %q: change %s", a.Name, strings.Join(sortedKeys(in.Updates), ", ")), nil
}

func (s *Service) describeDeploy(ctx context.Context, ws uuid.UUID, in DeployAgentInput) (string, error) {
	plan, err := s.planDeploy(ctx, ws, in)
	if err != nil {
		return "", err
	}
	if plan.channel == nil {
		return fmt.Sprintf("Deploy agent %q to %s", plan.agent.Name, in.Channel), nil
	}
	seat := ""
	if in.TakeOverInbound {
		seat = ", taking over its inbound traffic"
	}
	return fmt.Sprintf("Deploy agent %q to the channel %q%s", plan.agent.Name, plan.channel.Name, seat), nil
}

func (s *Service) describeDelete(ctx context.Context, ws uuid.UUID, in DeleteAgentInput) (string, error) {
	a, err := s.agent(ctx, ws, "agent_id", in.AgentID)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("Permanently delete agent %q (%s) with its knowledge base and deployments", a.Name, a.ID), nil
}
