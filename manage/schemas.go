package manage

// The operations' input schemas, with the constraints of the contract, so clients can validate
// arguments before calling.

const uuidProp = `{"type":"string","format":"uuid","description":"The agent's id."}`

const createAgentSchema = `{"type":"object","additionalProperties":false,"required":["yaml"],
 "properties":{"yaml":{"type":"string","minLength":1,"description":"The full agent blueprint in YAML (top-level key agent). Schema: /schemas/blueprint.json"}}}`

const updateAgentSchema = `{"type":"object","additionalProperties":false,"required":["agent_id","updates"],
 "properties":{"agent_id":` + uuidProp + `,
  "updates":{"type":"object","additionalProperties":false,"minProperties":1,"properties":{
   "name":{"type":"string","minLength":1,"maxLength":100},
   "description":{"type":"string","maxLength":500},
   "status":{"type":"string","enum":["enabled","disabled"]},
   "language":{"type":"string","description":"BCP 47 language tag"},
   "displayName":{"type":"string","minLength":1,"maxLength":50},
   "tone":{"type":"string","enum":["friendly","professional","casual","formal"]},
   "greeting":{"type":"string","minLength":1,"maxLength":500},
   "llmProvider":{"type":"string","enum":["alpha","beta","gamma"]},
   "llmModel":{"type":"string","description":"A model id of the provider's family"},
   "temperature":{"type":"number","minimum":0,"maximum":2},
   "maxTokens":{"type":"integer","minimum":1,"maximum":8192},
   "systemPrompt":{"type":"string","minLength":10,"maxLength":10000},
   "businessRules":{"type":"object","description":"business_rules of the blueprint"},
   "labels":{"type":"array","maxItems":50,"items":{"type":"string","minLength":1,"maxLength":50}},
   "toolsConfig":{"type":"array","items":{"type":"object"},"description":"tools of the blueprint"},
   "disclosureEnabled":{"type":"boolean"},
   "disclosureText":{"type":["string","null"],"minLength":1,"maxLength":1000,"description":"null uses the platform's default text"},
   "disclosureRecordingId":{"type":["string","null"],"format":"uuid","description":"A recording of kind disclosure"}}}}}`

const getAgentSchema = `{"type":"object","additionalProperties":false,
 "properties":{"agent_id":` + uuidProp + `,"name":{"type":"string","minLength":1,"description":"Case-insensitive name search"}},
 "anyOf":[{"required":["agent_id"]},{"required":["name"]}]}`

const listAgentsSchema = `{"type":"object","additionalProperties":false,
 "properties":{"status":{"type":"string","enum":["enabled","disabled"]}}}`

const crawlSchema = `{"type":"object","additionalProperties":false,"required":["agent_id","url"],
 "properties":{"agent_id":` + uuidProp + `,"url":{"type":"string","format":"uri","description":"A public https address"},
  "depth":{"type":"integer","minimum":1,"maximum":5,"default":2}}}`

const agentOnlySchema = `{"type":"object","additionalProperties":false,"required":["agent_id"],"properties":{"agent_id":` + uuidProp + `}}`

const deploySchema = `{"type":"object","additionalProperties":false,"required":["agent_id"],
 "properties":{"agent_id":` + uuidProp + `,
  "channel":{"type":"string","enum":["webchat","telco_voice","sms","msgapp_1","msgapp_2","msgapp_3","msgapp_4"]},
  "config":{"type":"object","description":"Opaque per-deployment settings; stored, never used for routing"},
  "channel_id":{"type":"string","format":"uuid","description":"A channel of the workspace"},
  "take_over_inbound":{"type":"boolean","default":false,"description":"Move the channel's inbound seat to this agent; needs channel_id"}}}`

const conversationsSchema = `{"type":"object","additionalProperties":false,"required":["agent_id"],
 "properties":{"agent_id":` + uuidProp + `,"limit":{"type":"integer","minimum":1,"maximum":100,"default":20}}}`
