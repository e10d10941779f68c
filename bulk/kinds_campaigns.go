package bulk

// moreKinds are the bulk tools of contacts and campaigns.
func moreKinds() []kind { return nil }
