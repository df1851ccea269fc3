"""A small REST API template (CloudFormation, as CDK synthesizes it) for the local API Gateway tests:
``POST /orders`` to SQS (IAM auth, model, validator, gateway responses), ``GET /orders/{id}`` to
DynamoDB GetItem, ``POST /denied`` whose role lacks ``sqs:SendMessage``, ``GET /health`` (MOCK,
no auth, throttled to a burst of 2), and a stage with an access log."""

from __future__ import annotations

import json
from typing import Any

STACK = "ApiStack"
STAGE = "dev"
QUEUE_MAX_BYTES = 1024

SEND_MESSAGE_TEMPLATE = (
    "#set($cid = $input.params('X-Correlation-Id'))"
    '#if($cid == "")#set($cid = $context.requestId)#end'
    "Action=SendMessage&MessageBody=$util.urlEncode($input.body)"
    "&MessageAttribute.1.Name=correlation_id&MessageAttribute.1.Value.DataType=String"
    "&MessageAttribute.1.Value.StringValue=$util.urlEncode($cid)"
    "&MessageAttribute.2.Name=idempotency_key&MessageAttribute.2.Value.DataType=String"
    "&MessageAttribute.2.Value.StringValue=$util.urlEncode($input.params('Idempotency-Key'))"
)
ACCEPTED_TEMPLATE = (
    "#set($cid = $input.params('X-Correlation-Id'))"
    '#if($cid == "")#set($cid = $context.requestId)#end'
    '$context.responseOverride.header.put("X-Correlation-Id", $cid)'
    '{"correlation_id": "$cid", '
    '"message_id": "$input.path(\'$.SendMessageResponse.SendMessageResult.MessageId\')"}'
)
REFUSED_TEMPLATE = (
    "#set($message = $input.path('$.Error.Message'))"
    '#if($message.contains("shorter than"))#set($context.responseOverride.status = 413)#end'
    '{"message": "$util.escapeJavaScript($message)"}'
)
GET_ITEM_TEMPLATE = {
    "Fn::Join": [
        "",
        [
            '{"TableName": "',
            {"Ref": "OrdersTable"},
            '", "Key": {"pk": {"S": "$util.escapeJavaScript($input.params(\'id\'))"}}}',
        ],
    ]
}
ORDER_VIEW_TEMPLATE = (
    "#set($item = $input.path('$.Item'))"
    "#if(!$item)#set($context.responseOverride.status = 404)"
    '{"message": "order not found"}'
    '#else{"order_id": "$item.pk.S", "status": "$item.status.S"}#end'
)
ORDER_SCHEMA = {
    "$schema": "http://json-schema.org/draft-04/schema#",
    "type": "object",
    "required": ["order_id", "currency", "amount"],
    "additionalProperties": False,
    "properties": {
        "order_id": {"type": "string", "pattern": "^order-[0-9]+$"},
        "currency": {"type": "string", "pattern": "^[A-Z]{3}$"},
        "amount": {"type": "integer", "minimum": 1},
        "customer_name": {"type": "string", "maxLength": 100},
        "padding": {"type": "string"},
    },
}
ACCESS_LOG_FORMAT = json.dumps(
    {
        "requestId": "$context.requestId",
        "status": "$context.status",
        "resourcePath": "$context.resourcePath",
        "error": "$context.error.message",
        "validation": "$context.error.validationErrorString",
        "integrationStatus": "$context.integrationStatus",
    }
)


def _sqs_integration(role: str) -> dict[str, Any]:
    return {
        "Type": "AWS",
        "IntegrationHttpMethod": "POST",
        "Uri": {
            "Fn::Join": [
                "",
                [
                    "arn:",
                    {"Ref": "AWS::Partition"},
                    ":apigateway:",
                    {"Ref": "AWS::Region"},
                    ":sqs:path/",
                    {"Ref": "AWS::AccountId"},
                    "/",
                    {"Fn::GetAtt": ["OrdersQueue", "QueueName"]},
                ],
            ]
        },
        "Credentials": {"Fn::GetAtt": [role, "Arn"]},
        "PassthroughBehavior": "NEVER",
        "RequestParameters": {"integration.request.header.Content-Type": "'application/x-www-form-urlencoded'"},
        "RequestTemplates": {"application/json": SEND_MESSAGE_TEMPLATE},
        "IntegrationResponses": [
            {
                "StatusCode": "202",
                "SelectionPattern": "2\\d{2}",
                "ResponseTemplates": {"application/json": ACCEPTED_TEMPLATE},
            },
            {
                "StatusCode": "400",
                "SelectionPattern": "4\\d{2}",
                "ResponseTemplates": {"application/json": REFUSED_TEMPLATE},
            },
            {"StatusCode": "500"},
        ],
    }


def _post_method(resource: str, role: str) -> dict[str, Any]:
    return {
        "Type": "AWS::ApiGateway::Method",
        "Properties": {
            "RestApiId": {"Ref": "Api"},
            "ResourceId": {"Ref": resource},
            "HttpMethod": "POST",
            "AuthorizationType": "AWS_IAM",
            "RequestParameters": {
                "method.request.header.Idempotency-Key": True,
                "method.request.header.X-Correlation-Id": False,
            },
            "RequestModels": {"application/json": {"Ref": "OrderModel"}},
            "RequestValidatorId": {"Ref": "Validator"},
            "Integration": _sqs_integration(role),
            "MethodResponses": [{"StatusCode": "202"}, {"StatusCode": "400"}, {"StatusCode": "413"}],
        },
    }


def template() -> dict[str, Any]:
    """The template, as ``cdk synth`` would write it."""
    api = {"Ref": "Api"}
    return {
        "Resources": {
            "OrdersQueue": {"Type": "AWS::SQS::Queue", "Properties": {"MaximumMessageSize": QUEUE_MAX_BYTES}},
            "OrdersTable": {
                "Type": "AWS::DynamoDB::Table",
                "Properties": {
                    "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                    "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}],
                    "BillingMode": "PAY_PER_REQUEST",
                },
            },
            "AccessLogs": {"Type": "AWS::Logs::LogGroup", "Properties": {}},
            "ApiRole": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}},
            "ApiRolePolicy": {
                "Type": "AWS::IAM::Policy",
                "Properties": {
                    "PolicyName": "api",
                    "Roles": [{"Ref": "ApiRole"}],
                    "PolicyDocument": {
                        "Statement": [
                            {
                                "Effect": "Allow",
                                "Action": "sqs:SendMessage",
                                "Resource": {"Fn::GetAtt": ["OrdersQueue", "Arn"]},
                            },
                            {
                                "Effect": "Allow",
                                "Action": "dynamodb:GetItem",
                                "Resource": {"Fn::GetAtt": ["OrdersTable", "Arn"]},
                            },
                        ]
                    },
                },
            },
            "ReadOnlyRole": {"Type": "AWS::IAM::Role", "Properties": {"AssumeRolePolicyDocument": {}}},
            "Api": {"Type": "AWS::ApiGateway::RestApi", "Properties": {"Name": "orders-api"}},
            "OrdersResource": {
                "Type": "AWS::ApiGateway::Resource",
                "Properties": {
                    "RestApiId": api,
                    "ParentId": {"Fn::GetAtt": ["Api", "RootResourceId"]},
                    "PathPart": "orders",
                },
            },
            "OrderResource": {
                "Type": "AWS::ApiGateway::Resource",
                "Properties": {"RestApiId": api, "ParentId": {"Ref": "OrdersResource"}, "PathPart": "{id}"},
            },
            "DeniedResource": {
                "Type": "AWS::ApiGateway::Resource",
                "Properties": {
                    "RestApiId": api,
                    "ParentId": {"Fn::GetAtt": ["Api", "RootResourceId"]},
                    "PathPart": "denied",
                },
            },
            "HealthResource": {
                "Type": "AWS::ApiGateway::Resource",
                "Properties": {
                    "RestApiId": api,
                    "ParentId": {"Fn::GetAtt": ["Api", "RootResourceId"]},
                    "PathPart": "health",
                },
            },
            "OrderModel": {
                "Type": "AWS::ApiGateway::Model",
                "Properties": {"RestApiId": api, "ContentType": "application/json", "Schema": ORDER_SCHEMA},
            },
            "Validator": {
                "Type": "AWS::ApiGateway::RequestValidator",
                "Properties": {"RestApiId": api, "ValidateRequestBody": True, "ValidateRequestParameters": True},
            },
            "PostOrders": _post_method("OrdersResource", "ApiRole"),
            "PostDenied": _post_method("DeniedResource", "ReadOnlyRole"),
            "GetOrder": {
                "Type": "AWS::ApiGateway::Method",
                "Properties": {
                    "RestApiId": api,
                    "ResourceId": {"Ref": "OrderResource"},
                    "HttpMethod": "GET",
                    "AuthorizationType": "AWS_IAM",
                    "Integration": {
                        "Type": "AWS",
                        "IntegrationHttpMethod": "POST",
                        "Uri": {"Fn::Sub": "arn:aws:apigateway:${AWS::Region}:dynamodb:action/GetItem"},
                        "Credentials": {"Fn::GetAtt": ["ApiRole", "Arn"]},
                        "PassthroughBehavior": "NEVER",
                        "RequestTemplates": {"application/json": GET_ITEM_TEMPLATE},
                        "IntegrationResponses": [
                            {"StatusCode": "200", "ResponseTemplates": {"application/json": ORDER_VIEW_TEMPLATE}},
                        ],
                    },
                },
            },
            "GetHealth": {
                "Type": "AWS::ApiGateway::Method",
                "Properties": {
                    "RestApiId": api,
                    "ResourceId": {"Ref": "HealthResource"},
                    "HttpMethod": "GET",
                    "AuthorizationType": "NONE",
                    "Integration": {
                        "Type": "MOCK",
                        "RequestTemplates": {"application/json": '{"statusCode": 200}'},
                        "IntegrationResponses": [
                            {
                                "StatusCode": "200",
                                "ResponseTemplates": {"application/json": '{"ok": true, "stage": "$context.stage"}'},
                                "ResponseParameters": {"method.response.header.Cache-Control": "'no-store'"},
                            }
                        ],
                    },
                },
            },
            "BadBody": {
                "Type": "AWS::ApiGateway::GatewayResponse",
                "Properties": {
                    "RestApiId": api,
                    "ResponseType": "BAD_REQUEST_BODY",
                    "StatusCode": "400",
                    "ResponseTemplates": {
                        "application/json": '{"message": $context.error.messageString, '
                        '"detail": "$context.error.validationErrorString"}'
                    },
                    "ResponseParameters": {"gatewayresponse.header.Content-Type": "'application/problem+json'"},
                },
            },
            "Deployment": {"Type": "AWS::ApiGateway::Deployment", "Properties": {"RestApiId": api}},
            "Stage": {
                "Type": "AWS::ApiGateway::Stage",
                "Properties": {
                    "RestApiId": api,
                    "DeploymentId": {"Ref": "Deployment"},
                    "StageName": STAGE,
                    "MethodSettings": [
                        {
                            "ResourcePath": "/*",
                            "HttpMethod": "*",
                            "ThrottlingRateLimit": 100,
                            "ThrottlingBurstLimit": 50,
                        },
                        {
                            "ResourcePath": "/~1health",
                            "HttpMethod": "GET",
                            "ThrottlingRateLimit": 0.01,
                            "ThrottlingBurstLimit": 2,
                        },
                    ],
                    "AccessLogSetting": {
                        "DestinationArn": {"Fn::GetAtt": ["AccessLogs", "Arn"]},
                        "Format": ACCESS_LOG_FORMAT,
                    },
                },
            },
        }
    }
