module decisiongateway

go 1.26.0
